package server

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// planSubmit plans where a job being submitted can start at once, for a
// SubmitPlace: only when no other instance waits (the job is then first
// in queue order, and the plan is the one the scheduler's next pass would
// make), and only while some machine has a free slot. It returns the
// index the plan was made at and the assignments, whose JobID the FSM
// fills in; none when the job must wait for the scheduler.
func (s *Server) planSubmit(c fsm.Submit, now time.Time) (uint64, []fsm.Assignment) {
	var (
		index uint64
		out   []fsm.Assignment
	)
	s.fsm.Read(func(v fsm.View) {
		if v.QueuedCount() > 0 {
			return
		}
		p := s.newPlanner(v, now)
		if !p.free {
			return
		}
		index = v.Index()
		// The job as Submit will create it; ID 0 is no job's, so the
		// matcher counts only this plan's instances against its
		// per-machine bound.
		j := &fsm.Job{Owner: c.Owner, Queue: c.Spec.QueueName(), Spec: c.Spec}
		for i := range max(c.Spec.Min, 1) {
			in := &fsm.Instance{Index: i, Attempt: 1, State: fsm.InstanceQueued}
			if !p.active.Admit(j.Queue) {
				return
			}
			req := matchRequest(j, in)
			res := p.matcher.MatchPool(req, p.pool)
			if res.Machine < 0 {
				return // capacity only shrinks within a plan
			}
			p.pool.Take(res.Machine, req)
			p.active.Take(j.Queue)
			out = append(out, fsm.Assignment{Instance: i, Attempt: 1, Machine: p.machines[res.Machine].Name, Key: res.Key})
		}
	})
	return index, out
}

// submitCommand is the command that creates a job: a SubmitPlace when
// every server applies one and some of the job can start at once, else a
// Submit that leaves all of it to the scheduler.
func (s *Server) submitCommand(c fsm.Submit) command {
	if s.groupApplies(fsm.SubmitPlaceType) {
		if index, as := s.planSubmit(c, c.At); len(as) > 0 {
			return command{fsm.SubmitPlaceType, fsm.SubmitPlace{Submit: c, PlannedAtIndex: index, Assignments: as}}
		}
	}
	return command{fsm.SubmitType, c}
}
