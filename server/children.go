package server

import (
	"fmt"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The one commit path for a stub's CHILD events (CHILD_REGISTER,
// CHILD_TERM), whichever way they arrive: POST /v1/child (handleChild, one
// event in an entry of its own), POST /v1/children (handleChildren, a
// stub's batch) and a stub's answer to a batch of Starts (the
// dispatcher's commitRegisters) all commit through commitChild or
// commitChildren. The fsm applies them in fsm/children.go.

// commitChild commits one CHILD event as an entry of its own. refused is
// why the event is not a valid CHILD event (nothing was proposed); err is
// a failed commit. A stale event, one for an attempt or job the database
// no longer holds as current, is committed and logged, and comes back
// with res.Stale.
func (s *Server) commitChild(ev client.ChildEvent) (res *fsm.Result, refused, err error) {
	cmd, refused := childCommand(ev)
	if refused != nil {
		return nil, refused, nil
	}
	if res, err = s.apply(cmd.t, cmd.body); err != nil {
		return nil, nil, err
	}
	s.logFenced(ev, res)
	return res, nil, nil
}

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
		cmds []command
		at   []int // the event each command is for
	)
	for i, ev := range evs {
		cmd, err := childCommand(ev)
		if err != nil {
			refused[i] = err
			continue
		}
		cmds = append(cmds, cmd)
		at = append(at, i)
	}
	committed, err := s.applyChildren(cmds)
	if err != nil {
		return results, refused, err
	}
	for k, res := range committed {
		s.logFenced(evs[at[k]], res)
		results[at[k]] = res
	}
	return results, refused, nil
}

// childCommand is the Raft command of a CHILD event.
func childCommand(ev client.ChildEvent) (command, error) {
	switch ev.Kind {
	case client.ChildRegister:
		return command{fsm.ChildRegisterType, fsm.ChildRegister{
			At: ev.At.UTC(), JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt,
			Machine: ev.Machine, PID: ev.PID,
		}}, nil
	case client.ChildTerm:
		return command{fsm.ChildTermType, fsm.ChildTerm{
			At: ev.At.UTC(), JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt,
			Machine: ev.Machine, ExitCode: ev.ExitCode, Signal: ev.Signal, Error: ev.Error, Reason: ev.Reason,
			LeaseLost: ev.Reason == client.ReasonLeaseExpired,
			UserMS:    ev.UserMS, SysMS: ev.SysMS, MaxRSSKB: ev.MaxRSSKB,
			Leftovers: leftoversFromWire(ev.Leftovers),
		}}, nil
	}
	return command{}, fmt.Errorf("child event kind %q: want %q or %q", ev.Kind, client.ChildRegister, client.ChildTerm)
}

// applyChildren commits CHILD event commands in order and returns each
// one's result: as ChildEvents entries shared with the events of other
// requests committed at the same time (see entryMerger).
func (s *Server) applyChildren(cmds []command) ([]*fsm.Result, error) {
	batch := make([]fsm.ChildEvent, len(cmds))
	for i, c := range cmds {
		switch body := c.body.(type) {
		case fsm.ChildRegister:
			batch[i] = fsm.ChildEvent{Register: &body}
		case fsm.ChildTerm:
			batch[i] = fsm.ChildEvent{Term: &body}
		default:
			return nil, fmt.Errorf("apply child events: unexpected %T", c.body)
		}
	}
	return s.children.commit(batch, s.proposeChildEvents)
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
