package server

import (
	"net/http"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// Per-user limits (issue 34): one user cannot starve the others. Each
// applies to the verified identity (principalOf), at the server that
// first receives the user's request, never to a stub or server acting on
// its own behalf, nor again to a request a follower forwarded:
//   - ratelimit.go: API requests, a token bucket per user (429 with
//     Retry-After);
//   - stream_limit.go: open log, event and session streams (429);
//   - quota_blobs.go: bytes the user's jobs keep in the blob store (413,
//     at PUT /v1/blobs before anything is kept, and again at submit).
//
// Each refusal names the limit and the `netmgr server` flag that raises
// it. See DESIGN.md "Identity and trust".

// The per-user limits' defaults, which `netmgr server` flags change.
const (
	// DefaultUserRate is the API requests a second one user's bucket
	// refills with (--user-rate).
	DefaultUserRate = 100
	// DefaultUserBurst is the most API requests one user may send at
	// once (--user-burst).
	DefaultUserBurst = 200
	// DefaultUserStreams is the most log, event and session streams one user may
	// have open at one server (--user-streams).
	DefaultUserStreams = 32
	// DefaultUserBlobQuota is the most bytes one user's jobs may keep in
	// the blob store (--user-blob-quota, in MiB there).
	DefaultUserBlobQuota = 1 << 30
)

// Reasons of netmgr_requests_denied_total for the per-user limits.
const (
	denyRateLimited    = "rate_limited"
	denyTooManyStreams = "too_many_streams"
	denyBlobQuota      = "blob_quota"
)

// limitWarnEvery is how often a user's refusals by one limit are logged.
const limitWarnEvery = time.Minute

// userLimits holds a server's per-user limits and their state.
type userLimits struct {
	rate    *rateLimiter   // nil: no limit
	streams *streamCounter // its max <= 0: no limit
	uploads *blobUploads
	quota   int64 // bytes; <= 0: no limit
	warn    *warnlimit.Limiter
}

// newUserLimits builds the limits cfg asks for, zero values meaning the
// defaults and negative ones no limit.
func newUserLimits(cfg Config) *userLimits {
	l := &userLimits{
		streams: newStreamCounter(orDefault(cfg.UserStreams, DefaultUserStreams)),
		uploads: newBlobUploads(),
		quota:   orDefault(cfg.UserBlobQuota, DefaultUserBlobQuota),
		warn:    warnlimit.New(limitWarnEvery),
	}
	if r := orDefault(cfg.UserRate, DefaultUserRate); r > 0 {
		l.rate = newRateLimiter(r, orDefault(cfg.UserBurst, DefaultUserBurst))
	}
	return l
}

// orDefault is v, or def when v is zero.
func orDefault[T int | int64 | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// firstHop reports whether p is a user whose request this server is the
// first to receive: not a stub or server on its own behalf, and not a
// request a follower forwarded (counted there).
func firstHop(p principal) bool { return p.User != "" && !p.Forwarded }

// limitExempt reports whether p is exempt from the request rate limit:
// root on a pool machine, or a declared admin_id.
func (s *Server) limitExempt(p principal) bool {
	if p.poolRoot() {
		return true
	}
	admin := false
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		admin = db.IsAdmin(p.User)
	})
	return admin
}

// refuseLimit refuses r for passing a per-user limit, as deny does, but
// logs a user's refusals by one limit once a minute (a flood would
// otherwise log each), with the count held back.
func (s *Server) refuseLimit(w http.ResponseWriter, r *http.Request, p principal, d *denial) {
	if ok, held := s.limits.warn.Allow(p.User+"\x00"+d.reason, time.Now()); ok {
		s.log.Warn("request refused by a per-user limit", "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr,
			"as", p.String(), "reason", d.reason, "refused_since_last_logged", held, "err", d.err)
	}
	s.metrics.denied(d.reason)
	s.writeError(w, d.status, d.err)
}
