package server

import (
	"fmt"
	"net/http"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleChild commits a stub's CHILD_REGISTER or CHILD_TERM. An event for
// an attempt or job the database no longer holds as current is answered as
// stale, so the stub drops it instead of resending it forever.
func (s *Server) handleChild(w http.ResponseWriter, r *http.Request) {
	var ev client.ChildEvent
	if err := decodeBody(r, &ev); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read child event: %w", err))
		return
	}
	cmd, err := childCommand(ev)
	if err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.apply(cmd.t, cmd.body)
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	s.logFenced(ev, res)
	s.writeJSON(w, http.StatusOK, client.ChildEventResponse{Index: res.Index, Stale: res.Stale})
}

// logFenced logs a CHILD event the database answered as stale: it named
// an attempt or job no longer current.
func (s *Server) logFenced(ev client.ChildEvent, res *fsm.Result) {
	if res.Stale {
		s.log.Info("fenced stale child event", "kind", ev.Kind, "job", ev.JobID, "instance", ev.Instance,
			"attempt", ev.Attempt, "machine", ev.Machine, "err", res.Err)
	}
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

// handleChildren commits a batch of CHILD events from one stub, in the
// order given (a stub sends an attempt's events in order): in a
// ChildEvents entry, shared with other requests' events, when every
// server applies that command, else each event as its own entry, proposed
// back to back so that Raft writes and replicates them together. Each
// event gets its own answer; an event that is not valid is answered with
// its error and the others are committed.
func (s *Server) handleChildren(w http.ResponseWriter, r *http.Request) {
	var batch client.ChildEventBatch
	if err := decodeBody(r, &batch); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read child events: %w", err))
		return
	}
	out := client.ChildEventBatchResponse{Results: make([]client.ChildEventResult, len(batch.Events))}
	var (
		cmds []command
		at   []int // the event each command is for
	)
	for i, ev := range batch.Events {
		cmd, err := childCommand(ev)
		if err != nil {
			out.Results[i].Error = err.Error()
			continue
		}
		cmds = append(cmds, cmd)
		at = append(at, i)
	}
	results, err := s.applyChildren(cmds)
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	for k, res := range results {
		s.logFenced(batch.Events[at[k]], res)
		out.Results[at[k]] = client.ChildEventResult{Index: res.Index, Stale: res.Stale}
	}
	s.writeJSON(w, http.StatusOK, out)
}

// applyChildren commits CHILD event commands in order and returns each
// one's result: as ChildEvents entries shared with the events of other
// requests committed at the same time (see entryMerger) when every
// server applies that type, else one entry each.
func (s *Server) applyChildren(cmds []command) ([]*fsm.Result, error) {
	if !s.groupApplies(fsm.ChildEventsType) {
		return s.applyAll(cmds)
	}
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
