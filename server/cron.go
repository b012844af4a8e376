package server

import (
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // CRON_TZ= names resolve alike on every server, whatever its system has

	"github.com/robfig/cron/v3"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// cronParser reads the cron= expressions: the standard five fields, or six
// with seconds first, the @hourly-style names and @every DURATION, with an
// optional CRON_TZ= or TZ= prefix.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron parses a cron expression. One without a time zone is read in
// UTC, not the leader's local zone, so that every server reads it alike.
func parseCron(expr string) (cron.Schedule, error) {
	full := expr
	if !strings.HasPrefix(expr, "CRON_TZ=") && !strings.HasPrefix(expr, "TZ=") {
		full = "CRON_TZ=UTC " + expr
	}
	s, err := cronParser.Parse(full)
	if err != nil {
		return nil, fmt.Errorf("cron=%q: %w (want MIN HOUR DAY MONTH WEEKDAY, e.g. \"0 3 * * *\", a name such as @daily, or @every 2s)", expr, err)
	}
	return s, nil
}

// cronGrace is how late a firing may be and still count as on time: a
// firing later than that, under catchup=none, is recorded as missed. A
// leader change shorter than it delays firings without dropping them. A
// schedule that fires more often than every 2*cronGrace has half its
// period instead (graceOf).
const cronGrace = 5 * time.Second

// graceOf is the grace of a schedule: cronGrace, or half the schedule's
// period after t if that is shorter.
func graceOf(sched cron.Schedule, t time.Time) time.Duration {
	a := sched.Next(t)
	b := sched.Next(a)
	if a.IsZero() || b.IsZero() {
		return cronGrace
	}
	return min(cronGrace, b.Sub(a)/2)
}

// validateCron checks a spec's cron options for the user.
func validateCron(s *client.JobSpec) error {
	if s.Cron == "" {
		if s.Catchup != "" || s.Overlap != "" {
			return fmt.Errorf("catchup= and overlap= apply to cron jobs only: add cron=\"...\"")
		}
		return nil
	}
	if _, err := parseCron(s.Cron); err != nil {
		return err
	}
	switch s.Catchup {
	case "", client.CatchupLast, client.CatchupNone:
	default:
		return fmt.Errorf("catchup=%s: want none or last", s.Catchup)
	}
	switch s.Overlap {
	case "", client.OverlapSkip, client.OverlapAllow:
	default:
		return fmt.Errorf("overlap=%s: want skip or allow", s.Overlap)
	}
	if len(s.After)+len(s.AfterOK)+len(s.AfterNotOK) > 0 {
		return fmt.Errorf("a cron job cannot wait for other jobs (after=, afterok=, afternotok=)")
	}
	return nil
}

// cronFirer is the leader's cron duty: it remembers the schedules it
// parsed, by expression. Only the leader loop uses it.
type cronFirer struct {
	s      *Server
	parsed map[string]cron.Schedule
}

func newCronFirer(s *Server) *cronFirer {
	return &cronFirer{s: s, parsed: make(map[string]cron.Schedule)}
}

// schedule returns the parsed schedule of expr, nil if it does not parse
// (a job submitted through a server whose parser differed).
func (c *cronFirer) schedule(expr string) cron.Schedule {
	if s, ok := c.parsed[expr]; ok {
		return s
	}
	s, err := parseCron(expr)
	if err != nil {
		c.s.log.Warn("cron job schedule does not parse; it never fires", "err", err)
	}
	c.parsed[expr] = s
	return s
}

// fire proposes, for every cron job that is due at now, its firing
// (fsm.CronDue, from the committed state), and returns the earliest next
// firing time of them all (zero when none). A firing proposed twice, by
// this leader or the next, runs once: Apply ignores a time already
// decided.
func (c *cronFirer) fire(now time.Time) time.Time {
	type due struct {
		fire *fsm.CronFire
		name string
	}
	var (
		fires []due
		next  time.Time
	)
	c.s.fsm.Read(func(v fsm.View) {
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
	for _, d := range fires {
		d.fire.At = d.fire.At.UTC()
		res, err := c.s.apply(fsm.CronFireType, *d.fire)
		switch {
		case err != nil:
			c.s.log.Warn("cron firing not committed; the next leader fires it", "job", d.fire.JobID, "scheduled", d.fire.Scheduled, "err", err)
			return time.Time{}
		case res.Err != nil:
			c.s.log.Warn("cron firing refused", "job", d.fire.JobID, "err", res.Err)
		case len(d.fire.Missed) > 0 || d.fire.MissedMore > 0:
			c.s.log.Info("cron job missed firings while no server led", "job", d.name, "missed", len(d.fire.Missed)+d.fire.MissedMore)
		}
	}
	return next
}

// cronToWire renders a cron job's schedule with its next firing.
func cronToWire(j *fsm.Job) *client.CronStatus {
	c := j.Cron
	out := &client.CronStatus{
		Schedule: j.Spec.Cron,
		Catchup:  j.Spec.CatchupPolicy(),
		Overlap:  j.Spec.OverlapPolicy(),
		Through:  c.Through,
		Runs:     slices.Clone(c.Runs),
		Skipped:  c.Skipped,
		Ended:    c.Ended,
		EndedBy:  c.EndedBy,
		EndedAt:  c.EndedAt,
	}
	for _, s := range c.Skips {
		out.Skips = append(out.Skips, client.CronSkip{Scheduled: s.Scheduled, Reason: s.Reason})
	}
	if !c.Ended {
		if sched, err := parseCron(j.Spec.Cron); err == nil {
			out.Next = sched.Next(c.Through)
		}
	}
	return out
}
