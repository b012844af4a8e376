package server

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// DefaultJobRetention is how long a finished job stays in the database
// by default (--job-retention).
const DefaultJobRetention = 24 * time.Hour

// maxExpiryEvery bounds how long the leader waits between two looks for
// finished jobs past the retention.
const maxExpiryEvery = time.Minute

// jobExpirer is the leader's retention duty: now and then it looks for
// finished jobs past the retention (fsm.View.ExpiredJobs) and, when it
// finds some, proposes one JobsExpire with its own time, which removes
// them on every server at that entry's index. Only the leader loop uses
// it.
type jobExpirer struct {
	s     *Server
	every time.Duration
	next  time.Time
}

func newJobExpirer(s *Server) *jobExpirer {
	every := maxExpiryEvery
	if r := s.cfg.JobRetention; r > 0 {
		// A short retention (tests, a busy site) is looked at a few
		// times per retention; a walk of the jobs costs too much to do
		// more often than every leader tick.
		every = min(max(r/4, leaderTick), maxExpiryEvery)
	}
	return &jobExpirer{s: s, every: every}
}

// run proposes a JobsExpire when one is due at now and something is past
// the retention. A failed proposal is tried again at the next look; a
// duplicated one removes nothing more.
func (e *jobExpirer) run(now time.Time) {
	cfg := &e.s.cfg
	if cfg.JobRetention <= 0 && cfg.JobRetentionCount <= 0 || now.Before(e.next) {
		return
	}
	e.next = now.Add(e.every)
	if !e.s.groupApplies(fsm.JobsExpireType) {
		return
	}
	c := fsm.JobsExpire{At: now.UTC(), Keep: cfg.JobRetentionCount}
	if cfg.JobRetention > 0 {
		c.Before = c.At.Add(-cfg.JobRetention)
	}
	n := 0
	e.s.fsm.Read(func(v fsm.View) { n = len(v.ExpiredJobs(c.Before, c.Keep)) })
	if n == 0 {
		return
	}
	res, err := e.s.apply(fsm.JobsExpireType, c)
	switch {
	case err != nil:
		e.s.log.Warn("expire finished jobs not committed; retried later", "jobs", n, "err", err)
	case res.Err != nil:
		e.s.log.Warn("expire finished jobs refused", "err", res.Err)
	default:
		e.s.log.Info("finished jobs past the retention removed", "jobs", res.Affected, "index", res.Index)
	}
}
