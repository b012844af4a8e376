package stub

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// handleOutageStatement answers GET /v1/outage: whether this stub's lease
// has run out (see outage.go).
func (s *Stub) handleOutageStatement(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.outage.statement())
}

// handleOutageWitness answers POST /v1/outage/witness with what a round
// that began after the request arrived found: the statements, in a pool
// of at most the fan-out, and their tally.
func (s *Stub) handleOutageWitness(w http.ResponseWriter, r *http.Request) {
	arrived := supervisor.BootNow()
	ctx, cancel := context.WithTimeout(r.Context(), client.OutageAnswerWithin)
	defer cancel()
	res, err := s.outage.witness.after(ctx, arrived)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, client.OutageWitness{Statements: res.sts, Tally: &res.tally})
}

// handleOutageTally answers GET /v1/outage/tally?from=A&to=B&within_ms=T
// with the tally of the stubs this stub knows whose names lie in [A, B],
// from a round that begins now and ends within T (at most
// client.OutageAnswerWithin); see outage_tree.go.
func (s *Stub) handleOutageTally(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	ms, err := strconv.ParseInt(q.Get("within_ms"), 10, 64)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, fmt.Errorf("outage tally: within_ms: %w", err))
		return
	case ms < 1 || time.Duration(ms)*time.Millisecond > client.OutageAnswerWithin:
		writeError(w, http.StatusBadRequest, fmt.Errorf("outage tally: within_ms %d is not in 1..%d", ms, client.OutageAnswerWithin.Milliseconds()))
		return
	case from == "" || to < from:
		writeError(w, http.StatusBadRequest, fmt.Errorf("outage tally: the range [%q, %q] is empty", from, to))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
	defer cancel()
	names := rangeOf(s.outage.peers.withSelf(s.outage.self), from, to)
	writeJSON(w, http.StatusOK, s.outage.tally(ctx, names))
}
