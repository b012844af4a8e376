package server

import (
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleControl serves suspend, resume and restart of a job.
func (s *Server) handleControl(t fsm.MessageType, action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, user, ok := s.resolveControlled(w, r, action)
		if !ok {
			return
		}
		res, err := s.apply(t, fsm.JobControl{At: time.Now().UTC(), JobID: id, By: user})
		if err != nil {
			s.writeApplyError(w, err)
			return
		}
		if res.Err != nil {
			s.writeError(w, statusOf(res.Err), res.Err)
			return
		}
		s.writeJSON(w, http.StatusOK, client.ControlResponse{ID: id, Affected: res.Affected})
	}
}
