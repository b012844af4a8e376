package planner

import (
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// SubmitPlan is the planner's answer for a job being submitted: where
// some of it starts at once, or, when none of it does, why no machine of
// the pool can run it.
type SubmitPlan struct {
	// Index is the index the placement was planned at.
	Index uint64
	// Assignments place instances of the job at once, in instance
	// order, for a SubmitPlace; the FSM fills in their JobID. None when
	// the job waits for the scheduler.
	Assignments []fsm.Assignment
	// Unrunnable says why no machine of the pool can run the job,
	// whatever the machines' state now (see unrunnable): the matcher's
	// reason, such as "3 machines lack key sparc". It is "" when some
	// machine can, and when the job is placed.
	Unrunnable string
}

// PlanSubmit answers, from one view and one liveness snapshot, both
// questions a submit asks of the job c creates: where it starts at once,
// and, when it does not, why no machine could run it. place says whether
// the caller may place it at once (a single submit whose entry is a plain
// Submit; a batch, a check, or a job whose features need an entry type of
// their own may not): it is then placed only when no other instance waits
// (the job is first in queue order, and the plan is the one the next pass
// would make) and only while some machine has a free slot. live may be
// nil when SubmitNeedsLiveness says it is not read.
func PlanSubmit(v fsm.View, live map[string]Liveness, c fsm.Submit, place bool) SubmitPlan {
	var plan SubmitPlan
	if place && v.QueuedCount() == 0 { // else the job waits behind others: spare the pass
		plan.Index, plan.Assignments = New(v, live, c.At).placeSubmit(c)
		if len(plan.Assignments) > 0 {
			return plan // a job placed at once is runnable
		}
	}
	plan.Unrunnable = unrunnable(v, live, c)
	return plan
}

// SubmitNeedsLiveness reports whether PlanSubmit reads the liveness map
// for c in v: to place it, or for a requirement on the idle attribute
// (idle>=MINUTES). A caller may pass nil otherwise and spare taking the
// pool's snapshot.
func SubmitNeedsLiveness(v fsm.View, c fsm.Submit, place bool) bool {
	return place && v.QueuedCount() == 0 || needsLiveness(&c.Spec)
}

// placeSubmit plans where the job c creates can start at once, for
// PlanSubmit. It returns the index the plan was made at and the
// assignments; none when the job must wait for the scheduler.
func (p *Pass) placeSubmit(c fsm.Submit) (uint64, []fsm.Assignment) {
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
		if !p.admit(j) {
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
		p.active.TakeUser(j.Queue, j.Owner)
		out = append(out, p.assignment(0, i, 1, res))
	}
	return p.v.Index(), out
}
