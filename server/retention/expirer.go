package retention

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty"
)

// maxEvery bounds how long the leader waits between two looks for
// finished jobs past the retention.
const maxEvery = time.Minute

// Expirer is one leader term's retention duty. Only the leader loop uses
// it.
type Expirer struct {
	h         duty.Handle
	retention time.Duration // how long a finished job stays; 0: no limit
	keep      int           // how many finished jobs stay at most; 0: no limit
	every     time.Duration
	next      time.Time
}

// New returns the duty that removes finished jobs older than retention
// and, when keep is positive, the earliest finished beyond keep (zero
// turns either rule off); tick is how often the leader loop runs, the
// shortest interval between two looks.
func New(h duty.Handle, retention time.Duration, keep int, tick time.Duration) *Expirer {
	every := maxEvery
	if retention > 0 {
		// A short retention (tests, a busy site) is looked at a few
		// times per retention; a walk of the jobs costs too much to do
		// more often than every leader tick.
		every = min(max(retention/4, tick), maxEvery)
	}
	return &Expirer{h: h, retention: retention, keep: keep, every: every}
}

// Run proposes a JobsExpire when one is due at now and something is past
// the retention. A failed proposal is tried again at the next look; a
// duplicated one removes nothing more.
func (e *Expirer) Run(now time.Time) {
	if e.retention <= 0 && e.keep <= 0 || now.Before(e.next) {
		return
	}
	e.next = now.Add(e.every)
	if !e.h.Applies(fsm.JobsExpireType) {
		return
	}
	c := fsm.JobsExpire{At: now.UTC(), Keep: e.keep}
	if e.retention > 0 {
		c.Before = c.At.Add(-e.retention)
	}
	n := 0
	e.h.Read(func(v fsm.View) { n = len(v.ExpiredJobs(c.Before, c.Keep)) })
	if n == 0 {
		return
	}
	log := e.h.Log()
	res, err := e.h.Apply(fsm.JobsExpireType, c)
	switch {
	case err != nil:
		log.Warn("expire finished jobs not committed; retried later", "jobs", n, "err", err)
	case res.Err != nil:
		log.Warn("expire finished jobs refused", "err", res.Err)
	default:
		log.Info("finished jobs past the retention removed", "jobs", res.Affected, "index", res.Index)
	}
}
