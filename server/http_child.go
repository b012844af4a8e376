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
	var (
		t    fsm.MessageType
		body any
	)
	switch ev.Kind {
	case client.ChildRegister:
		t, body = fsm.ChildRegisterType, fsm.ChildRegister{
			At: ev.At.UTC(), JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt,
			Machine: ev.Machine, PID: ev.PID,
		}
	case client.ChildTerm:
		t, body = fsm.ChildTermType, fsm.ChildTerm{
			At: ev.At.UTC(), JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt,
			Machine: ev.Machine, ExitCode: ev.ExitCode, Signal: ev.Signal, Error: ev.Error, Reason: ev.Reason,
			LeaseLost: ev.Reason == client.ReasonLeaseExpired,
			UserMS:    ev.UserMS, SysMS: ev.SysMS, MaxRSSKB: ev.MaxRSSKB,
			Leftovers: leftoversFromWire(ev.Leftovers),
		}
	default:
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("child event kind %q: want %q or %q", ev.Kind, client.ChildRegister, client.ChildTerm))
		return
	}
	res, err := s.apply(t, body)
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Stale {
		s.log.Info("fenced stale child event", "kind", ev.Kind, "job", ev.JobID, "instance", ev.Instance,
			"attempt", ev.Attempt, "machine", ev.Machine, "err", res.Err)
	}
	s.writeJSON(w, http.StatusOK, client.ChildEventResponse{Index: res.Index, Stale: res.Stale})
}
