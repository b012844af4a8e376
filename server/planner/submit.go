package planner

import (
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// PlaceSubmit plans where a job being submitted by c can start at once,
// for a SubmitPlace: only when no other instance waits (the job is then
// first in queue order, and the plan is the one the next pass would
// make), and only while some machine has a free slot. It returns the
// index the plan was made at and the assignments, in instance order, whose
// JobID the FSM fills in; none when the job must wait for the scheduler.
func (p *Pass) PlaceSubmit(c fsm.Submit) (uint64, []fsm.Assignment) {
	if p.v.QueuedCount() > 0 || !p.free || c.Spec.Gang || p.limits[c.Spec.QueueName()].Placement() == queue.PolicyGang {
		// A gang is left to the scheduler, which places it whole.
		return 0, nil
	}
	var out []fsm.Assignment
	// The job as Submit will create it; ID 0 is no job's, so the matcher
	// counts only this plan's instances against its per-machine bound.
	j := &fsm.Job{Owner: c.Owner, Queue: c.Spec.QueueName(), Spec: c.Spec}
	for i := range max(c.Spec.Min, 1) {
		in := &fsm.Instance{Index: i, Attempt: 1, State: fsm.InstanceQueued}
		if !p.active.Admit(j.Queue) {
			break
		}
		req, ok := p.restrict(j, matchRequest(j, in))
		if !ok {
			break
		}
		res := p.matcher.MatchPool(req, p.pool)
		if res.Machine < 0 {
			break // capacity only shrinks within a plan
		}
		p.pool.Take(res.Machine, req)
		p.owners.take(res.Machine, j, p.limits, 1)
		p.active.Take(j.Queue)
		out = append(out, p.assignment(0, i, 1, res))
	}
	return p.v.Index(), out
}
