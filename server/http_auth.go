package server

import (
	"fmt"
	"net/http"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Who may do what. Handlers call requireAdmin or resolveControlled before
// they act; both answer the request themselves when the user may not.

// requestUser is the identity a request acts as. Today it is the name the
// client sends; an authenticated identity replaces this function alone.
func requestUser(r *http.Request) string {
	if u := r.Header.Get(client.UserHeader); u != "" {
		return u
	}
	return "nobody"
}

// mayAdminister reports whether user may change the database: root, or a
// declared admin_id. Until a database declares one, anyone may load the
// first database.
func mayAdminister(db *fsm.Database, user string) bool {
	return user == "root" || len(db.Admins) == 0 || db.IsAdmin(user)
}

// mayActFor reports whether user may act on something owner holds (a
// job, a reservation): owner, root, or a declared admin_id.
func mayActFor(db *fsm.Database, owner, user string) bool {
	return user == owner || user == "root" || db.IsAdmin(user)
}

// requireAdmin answers 403 unless the requesting user administers the
// pool; it returns the user when they may.
func (s *Server) requireAdmin(w http.ResponseWriter, r *http.Request, action string) (string, bool) {
	user := requestUser(r)
	var allowed bool
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		allowed = mayAdminister(db, user)
	})
	if !allowed {
		s.writeError(w, http.StatusForbidden, fmt.Errorf("%s: %w: %s is not an admin_id of this database", action, errPermission, user))
	}
	return user, allowed
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
		db, _ := v.Database()
		allowed = mayActFor(db, j.Owner, user)
	})
	switch {
	case !found:
		s.writeError(w, http.StatusNotFound, errNoJob(ref))
	case !allowed:
		s.writeError(w, http.StatusForbidden, fmt.Errorf("%s job %s: %w: it belongs to %s; only its owner or an admin_id may", action, ref, errPermission, owner))
	default:
		return id, user, true
	}
	return 0, "", false
}
