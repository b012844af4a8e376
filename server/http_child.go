package server

import (
	"fmt"
	"net/http"

	"github.com/netmgr/netmgr/client"
)

// handleChildren commits a batch of CHILD events from one stub, in the
// order given (commitChildren). Each event gets its own answer; an event
// that is not valid is answered with its error and the others are
// committed.
func (s *Server) handleChildren(w http.ResponseWriter, r *http.Request) {
	var batch client.ChildEventBatch
	if err := decodeBody(r, &batch); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read child events: %w", err))
		return
	}
	stub, ok := s.requireStub(w, r, "")
	if !ok {
		return
	}
	// A stub reports only its own machine's attempts; the fsm then fences
	// an event whose machine is not where the attempt was placed.
	for _, ev := range batch.Events {
		if stub != "" && ev.Machine != stub {
			s.deny(w, r, principalOf(r), &denial{http.StatusForbidden, denyWrongMachine,
				fmt.Errorf("CHILD event for %d.%d.%d on machine %s: the certificate is machine %s's (%w)",
					ev.JobID, ev.Instance, ev.Attempt, ev.Machine, stub, errPermission)})
			return
		}
	}
	results, refused, err := s.commitChildren(batch.Events)
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	out := client.ChildEventBatchResponse{Results: make([]client.ChildEventResult, len(batch.Events))}
	for i, res := range results {
		if refused[i] != nil {
			out.Results[i].Error = refused[i].Error()
			continue
		}
		out.Results[i] = client.ChildEventResult{Index: res.Index, Stale: res.Stale}
	}
	s.writeJSON(w, http.StatusOK, out)
}
