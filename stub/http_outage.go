package stub

import (
	"context"
	"net/http"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// handleOutageStatement answers GET /v1/outage: whether this stub's lease
// has run out (see outage.go).
func (s *Stub) handleOutageStatement(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.outage.statement())
}

// handleOutageWitness answers POST /v1/outage/witness with the statements
// of a round that began after the request arrived.
func (s *Stub) handleOutageWitness(w http.ResponseWriter, r *http.Request) {
	arrived := supervisor.BootNow()
	ctx, cancel := context.WithTimeout(r.Context(), client.OutageAnswerWithin)
	defer cancel()
	sts, err := s.outage.witness.after(ctx, arrived)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, client.OutageWitness{Statements: sts})
}
