package server

import (
	"fmt"
	"net/http"

	"github.com/netmgr/netmgr/fsm"
)

// Who may do what. Handlers call requireAdmin or resolveControlled before
// they act; both answer the request themselves when the user may not.

// requestUser is the user a request acts for, as identify verified it;
// empty for a stub or server acting on its own behalf.
func requestUser(r *http.Request) string { return principalOf(r).User }

// mayAdminister reports whether p may change the database: root on a
// machine of the pool, or a declared admin_id. In the insecure mode, until
// a database declares one, anyone may load the first database.
func mayAdminister(db *fsm.Database, p principal) bool {
	return p.poolRoot() || (p.User != "" && db.IsAdmin(p.User)) || (p.Insecure && len(db.Admins) == 0)
}

// mayActFor reports whether p may act on something owner holds (a job, a
// reservation): owner, root on a pool machine, or a declared admin_id.
func mayActFor(db *fsm.Database, owner string, p principal) bool {
	return p.User != "" && (p.User == owner || p.poolRoot() || db.IsAdmin(p.User))
}

// requireAdmin answers 403 unless the requesting user administers the
// pool; it returns the user when they may.
func (s *Server) requireAdmin(w http.ResponseWriter, r *http.Request, action string) (string, bool) {
	p := principalOf(r)
	var allowed bool
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		allowed = mayAdminister(db, p)
	})
	if !allowed {
		s.deny(w, r, p, &denial{http.StatusForbidden, denyNotPermitted,
			fmt.Errorf("%s: %w: %s is neither an admin_id of this database nor root on a pool machine", action, errPermission, p)})
	}
	return p.User, allowed
}

// resolveControlled finds the job a request names and checks that the
// requesting user may act on it; it has answered the request when ok is
// false.
func (s *Server) resolveControlled(w http.ResponseWriter, r *http.Request, action string) (id uint64, user string, ok bool) {
	ref := r.PathValue("ref")
	p := principalOf(r)
	user = p.User
	var allowed bool
	var owner string
	var lookupErr error
	s.fsm.Read(func(v fsm.View) {
		var j *fsm.Job
		if j, lookupErr = lookupJob(v, ref); lookupErr != nil {
			return
		}
		id, owner = j.ID, j.Owner
		db, _ := v.Database()
		allowed = mayActFor(db, j.Owner, p)
	})
	switch {
	case lookupErr != nil:
		s.writeError(w, statusOf(lookupErr), lookupErr)
	case !allowed:
		s.deny(w, r, p, &denial{http.StatusForbidden, denyNotPermitted,
			fmt.Errorf("%w: job %s belongs to %s; only its owner or an admin_id may %s it, and you are %s", errPermission, ref, owner, action, p)})
	default:
		return id, user, true
	}
	return 0, "", false
}

// mayRunAs answers 403 unless the requesting user may run jobs as
// themselves: anyone but root may; root only from a machine of the pool
// and only where the database says allow_root_jobs.
func (s *Server) mayRunAs(w http.ResponseWriter, r *http.Request) bool {
	p := principalOf(r)
	if p.User != "root" || p.Insecure {
		return true
	}
	var allowed bool
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		allowed = db.AllowRootJobs
	})
	var why string
	switch {
	case p.Machine == "":
		why = "a job runs as root only when root submits it on a machine of the pool (through netexec there), never with a token or client certificate"
	case !allowed:
		why = "this pool's database does not allow root jobs; an admin adds the line allow_root_jobs to it, or submit as an ordinary user"
	default:
		return true
	}
	s.deny(w, r, p, &denial{http.StatusForbidden, denyRootJob, fmt.Errorf("submit as root: %w: %s", errPermission, why)})
	return false
}
