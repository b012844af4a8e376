package server

import (
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// submitCommand is the command that creates a job: a SubmitFiles for a
// job with copy_in or copy_out, a SubmitGang for a
// gang job, a SubmitLimits for a
// job with a time limit or warning of its own, a SubmitCron for a
// cron job, a SubmitDir for a job with a working directory, a SubmitAfter
// for a job with dependencies, a SubmitPlace when some of the job can start at
// once (see planner.Pass.PlaceSubmit), else a Submit that leaves all of it
// to the scheduler. The SubmitType of the
// latter only marks it in process: applySubmit commits it inside a
// Submits entry.
func (s *Server) submitCommand(c fsm.Submit) command {
	if c.Spec.HasFiles() {
		// Files in or out: its own entry type (which also carries
		// everything else a spec may say), which a replica too old for
		// it refuses rather than run the job without its files. The
		// scheduler places it.
		return command{fsm.SubmitFilesType, c}
	}
	if c.Spec.Gang {
		// A gang: its own entry type (which also carries everything the
		// older ones do), which a replica too old for it refuses rather
		// than place its instances one by one. The scheduler places it
		// whole.
		return command{fsm.SubmitGangType, c}
	}
	if c.Spec.HasLimits() {
		// Limits of its own: its own entry type (which also carries a
		// cron schedule, a working directory and dependencies), which a
		// replica too old for it refuses rather than run the job
		// unlimited. The scheduler places it.
		return command{fsm.SubmitLimitsType, c}
	}
	if c.Spec.Cron != "" {
		// A template with nothing to place, in its own entry type, which
		// a replica too old for it refuses rather than run it once.
		return command{fsm.SubmitCronType, c}
	}
	if c.Spec.Dir != "" {
		// A working directory: its own entry type (which also carries
		// dependencies), which a replica too old for it refuses rather
		// than run the job elsewhere.
		return command{fsm.SubmitDirType, c}
	}
	if c.Spec.HasDependencies() {
		// Held until its dependencies decide: nothing to place, and its
		// own entry type, which a replica too old for it refuses.
		return command{fsm.SubmitAfterType, c}
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
