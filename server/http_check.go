package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
)

// handleCheck answers POST /v1/jobs/check with a submit request's body:
// the job as the spec language writes it, and whether the pool as this
// server sees it could run it now (the matcher's verdict, as
// netstatus --why words it), without submitting anything. The
// dashboard's submit form shows both as the user types. copy_in's files
// are not asked for: they are sent at submit.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	var req client.SubmitRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("check job: read request: %w", err))
		return
	}
	out := client.CheckResponse{Spec: spec.Format(req.Spec)}
	// The files of copy_in are sent at submit (netexec and the
	// dashboard's form pack them then); the check judges the rest.
	req.Spec.CopyIn, req.Spec.CopyInBlob, req.Spec.CopyInSize = nil, "", 0
	cmd, _, err := s.submitFromRequest(r, req, time.Now().UTC())
	if err != nil {
		out.Error = err.Error()
	} else {
		_, out.Unrunnable = s.planSubmit(cmd, false)
	}
	s.writeJSON(w, http.StatusOK, out)
}
