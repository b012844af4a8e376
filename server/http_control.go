package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// errNotOwner refuses an action on a job by a user who neither owns it nor
// administers the pool.
var errNotOwner = errors.New("permission denied")

// mayControl reports whether user may act on job: its owner, root, or a
// declared admin_id.
func mayControl(v fsm.View, job *fsm.Job, user string) bool {
	db, _ := v.Database()
	return user == job.Owner || user == "root" || db.IsAdmin(user)
}

// resolveControlled finds the job a request names and checks that the
// requesting user may act on it; it has answered the request when ok is
// false.
func (s *Server) resolveControlled(w http.ResponseWriter, r *http.Request, action string) (id uint64, user string, ok bool) {
	ref := r.PathValue("ref")
	user = requestUser(r)
	var found, allowed bool
	var owner string
	s.fsm.Read(func(v fsm.View) {
		j, exists := lookupJob(v, ref)
		if !exists {
			return
		}
		found, id, owner = true, j.ID, j.Owner
		allowed = mayControl(v, j, user)
	})
	switch {
	case !found:
		s.writeError(w, http.StatusNotFound, errNoJob(ref))
	case !allowed:
		s.writeError(w, http.StatusForbidden, fmt.Errorf("%s job %s: %w: it belongs to %s; only its owner or an admin_id may", action, ref, errNotOwner, owner))
	default:
		return id, user, true
	}
	return 0, "", false
}

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

// statusOf maps a rule violation from the fsm to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, fsm.ErrNoSuchJob), errors.Is(err, fsm.ErrNoSuchQueue), errors.Is(err, fsm.ErrNoSuchMachine):
		return http.StatusNotFound
	case errors.Is(err, fsm.ErrJobFinished), errors.Is(err, fsm.ErrQueueInUse), errors.Is(err, fsm.ErrReserved):
		return http.StatusConflict
	}
	return http.StatusBadRequest
}
