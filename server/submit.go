package server

import (
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// planSubmit is the command that creates the job of c and, when no
// machine of the pool could run it, why (the sentence netstatus --why
// would give), from one planner call over one read of the database and at
// most one snapshot of the pool's liveness (planner.PlanSubmit). The
// command is the entry type the job's features ask for
// (fsm.SubmitEntryType: SubmitFiles, SubmitGang, SubmitLimits,
// SubmitCron, SubmitDir or SubmitAfter, each of which a replica too old
// for it refuses rather than misapply; the scheduler places them), else,
// when place is set (a single submit), a SubmitPlace when some of the job
// can start at once, else a Submit that leaves all of it to the
// scheduler. The SubmitType of the latter only marks it in process:
// applySubmit commits it inside a Submits entry.
func (s *Server) planSubmit(c fsm.Submit, place bool) (command, string) {
	t := fsm.SubmitEntryType(&c.Spec)
	place = place && t == fsm.SubmitType
	var plan planner.SubmitPlan
	s.fsm.Read(func(v fsm.View) {
		var live map[string]planner.Liveness
		if planner.SubmitNeedsLiveness(v, c, place) {
			live = s.liveness(c.At)
		}
		plan = planner.PlanSubmit(v, live, c, place)
	})
	if len(plan.Assignments) > 0 {
		return command{fsm.SubmitPlaceType, fsm.SubmitPlace{Submit: c, PlannedAtIndex: plan.Index, Assignments: plan.Assignments}}, ""
	}
	return command{t, c}, plan.Unrunnable
}

// applySubmit commits a submit command: a plain Submit in a Submits
// entry shared with the jobs of concurrent requests, a SubmitPlace, a
// SubmitAfter or a SubmitDir as its own entry.
func (s *Server) applySubmit(sc command) (*fsm.Result, error) {
	c, ok := sc.body.(fsm.Submit)
	if !ok || sc.t != fsm.SubmitType { // a SubmitPlace, SubmitAfter, SubmitDir or SubmitCron
		return s.apply(sc.t, sc.body)
	}
	results, err := s.submits.commit([]fsm.Submit{c}, s.proposeSubmits)
	if err != nil {
		return nil, err
	}
	return results[0], nil
}

// proposeSubmits commits subs as one Submits entry.
func (s *Server) proposeSubmits(subs []fsm.Submit) ([]*fsm.Result, error) {
	res, err := s.apply(fsm.SubmitsType, fsm.Submits{Submits: subs})
	return batchResults(fsm.SubmitsType, res, err, len(subs))
}
