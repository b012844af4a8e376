package server

import (
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// submitCommand is the command that creates a job: the entry type its
// features ask for (fsm.SubmitEntryType: SubmitFiles, SubmitGang,
// SubmitLimits, SubmitCron, SubmitDir or SubmitAfter, each of which a
// replica too old for it refuses rather than misapply; the scheduler
// places them), else a SubmitPlace when some of the job can start at
// once (see planner.Pass.PlaceSubmit), else a Submit that leaves all of
// it to the scheduler. The SubmitType of the latter only marks it in
// process: applySubmit commits it inside a Submits entry.
func (s *Server) submitCommand(c fsm.Submit) command {
	if t := fsm.SubmitEntryType(&c.Spec); t != fsm.SubmitType {
		return command{t, c}
	}
	var (
		index uint64
		as    []fsm.Assignment
	)
	s.fsm.Read(func(v fsm.View) {
		if v.QueuedCount() > 0 {
			return // the job will wait behind others: spare the pass
		}
		index, as = planner.New(v, s.liveness(c.At), c.At).PlaceSubmit(c)
	})
	if len(as) > 0 {
		return command{fsm.SubmitPlaceType, fsm.SubmitPlace{Submit: c, PlannedAtIndex: index, Assignments: as}}
	}
	return command{fsm.SubmitType, c}
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
