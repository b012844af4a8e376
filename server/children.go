package server

import (
	"fmt"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The one commit path for a stub's CHILD events (CHILD_REGISTER,
// CHILD_TERM), whichever way they arrive: POST /v1/children
// (handleChildren, a stub's batch) and a stub's answer to a batch of
// Starts (the dispatcher's commitRegisters) both commit through
// commitChildren. The fsm applies them in fsm/children.go.

// commitChildren commits CHILD events in order (a stub sends an attempt's
// events in order): in a ChildEvents entry, shared with other requests'
// events (see entryMerger). For each event it returns, at the event's
// index, its result or why it was refused; the others are committed
// anyway. err is a commit that failed as a whole; refused is filled in
// even then.
func (s *Server) commitChildren(evs []client.ChildEvent) (results []*fsm.Result, refused []error, err error) {
	results = make([]*fsm.Result, len(evs))
	refused = make([]error, len(evs))
	var (
		batch []fsm.ChildEvent
		at    []int // the event each of batch is
	)
	faults := s.groupApplies(fsm.MachineHealthType)
	for i, ev := range evs {
		e, err := childEvent(ev, faults)
		if err != nil {
			refused[i] = err
			continue
		}
		batch = append(batch, e)
		at = append(at, i)
	}
	committed, err := s.children.commit(batch, s.proposeChildEvents)
	if err != nil {
		return results, refused, err
	}
	for k, res := range committed {
		s.logFenced(evs[at[k]], res)
		results[at[k]] = res
	}
	return results, refused, nil
}

// childEvent is the log form of a CHILD event, one event of a
// ChildEvents entry. A CHILD_TERM's MachineFault goes into the log only
// when faults is set: every server applies it (command level 22); a
// replica that predates it would record a failure instead.
func childEvent(ev client.ChildEvent, faults bool) (fsm.ChildEvent, error) {
	switch ev.Kind {
	case client.ChildRegister:
		return fsm.ChildEvent{Register: &fsm.ChildRegister{
			At: ev.At.UTC(), JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt,
			Machine: ev.Machine, PID: ev.PID,
		}}, nil
	case client.ChildTerm:
		return fsm.ChildEvent{Term: &fsm.ChildTerm{
			At: ev.At.UTC(), JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt,
			Machine: ev.Machine, ExitCode: ev.ExitCode, Signal: ev.Signal, Error: ev.Error, Reason: ev.Reason,
			LeaseLost: ev.Reason == client.ReasonLeaseExpired,
			UserMS:    ev.UserMS, SysMS: ev.SysMS, MaxRSSKB: ev.MaxRSSKB,
			Leftovers:    leftoversFromWire(ev.Leftovers),
			MachineFault: ev.MachineFault && faults,
		}}, nil
	}
	return fsm.ChildEvent{}, fmt.Errorf("child event kind %q: want %q or %q", ev.Kind, client.ChildRegister, client.ChildTerm)
}

// proposeChildEvents commits evs as one ChildEvents entry.
func (s *Server) proposeChildEvents(evs []fsm.ChildEvent) ([]*fsm.Result, error) {
	res, err := s.apply(fsm.ChildEventsType, fsm.ChildEvents{Events: evs})
	return batchResults(fsm.ChildEventsType, res, err, len(evs))
}

// logFenced logs a CHILD event the database answered as stale: it named
// an attempt or job no longer current.
func (s *Server) logFenced(ev client.ChildEvent, res *fsm.Result) {
	if res.Stale {
		s.log.Info("fenced stale child event", "kind", ev.Kind, "job", ev.JobID, "instance", ev.Instance,
			"attempt", ev.Attempt, "machine", ev.Machine, "err", res.Err)
	}
}
