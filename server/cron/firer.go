package cron

import (
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty"
)

// Firer is the leader's cron duty: it remembers the schedules it parsed,
// by expression. Only the leader loop uses it.
type Firer struct {
	h      duty.Handle
	parsed map[string]robfig.Schedule
}

// New returns a leader term's cron duty.
func New(h duty.Handle) *Firer {
	return &Firer{h: h, parsed: make(map[string]robfig.Schedule)}
}

// schedule returns the parsed schedule of expr, nil if it does not parse
// (a job submitted through a server whose parser differed).
func (c *Firer) schedule(expr string) robfig.Schedule {
	if s, ok := c.parsed[expr]; ok {
		return s
	}
	s, err := parse(expr)
	if err != nil {
		c.h.Log().Warn("cron job schedule does not parse; it never fires", "err", err)
	}
	c.parsed[expr] = s
	return s
}

// Fire proposes, for every cron job that is due at now, its firing
// (fsm.CronDue, from the committed state), and returns the earliest next
// firing time of them all (zero when none). A firing proposed twice, by
// this leader or the next, runs once: Apply ignores a time already
// decided.
func (c *Firer) Fire(now time.Time) time.Time {
	type due struct {
		fire *fsm.CronFire
		name string
	}
	var (
		fires []due
		next  time.Time
	)
	c.h.Read(func(v fsm.View) {
		for _, j := range v.CronJobs() {
			sched := c.schedule(j.Spec.Cron)
			if sched == nil {
				continue
			}
			f, n := fsm.CronDue(j, sched, now, graceOf(sched, j.Cron.Through))
			if f != nil {
				fires = append(fires, due{f, j.Name})
			}
			if !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
	})
	log := c.h.Log()
	for _, d := range fires {
		d.fire.At = d.fire.At.UTC()
		res, err := c.h.Apply(fsm.CronFireType, *d.fire)
		switch {
		case err != nil:
			log.Warn("cron firing not committed; the next leader fires it", "job", d.fire.JobID, "scheduled", d.fire.Scheduled, "err", err)
			return time.Time{}
		case res.Err != nil:
			log.Warn("cron firing refused", "job", d.fire.JobID, "err", res.Err)
		case len(d.fire.Missed) > 0 || d.fire.MissedMore > 0:
			log.Info("cron job missed firings while no server led", "job", d.name, "missed", len(d.fire.Missed)+d.fire.MissedMore)
		}
	}
	return next
}
