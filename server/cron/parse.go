package cron

import (
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // CRON_TZ= names resolve alike on every server, whatever its system has

	robfig "github.com/robfig/cron/v3"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// parser reads the cron= expressions: the standard five fields, or six
// with seconds first, the @hourly-style names and @every DURATION, with an
// optional CRON_TZ= or TZ= prefix.
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// parse parses a cron expression. One without a time zone is read in
// UTC, not the leader's local zone, so that every server reads it alike.
func parse(expr string) (robfig.Schedule, error) {
	full := expr
	if !strings.HasPrefix(expr, "CRON_TZ=") && !strings.HasPrefix(expr, "TZ=") {
		full = "CRON_TZ=UTC " + expr
	}
	s, err := parser.Parse(full)
	if err != nil {
		return nil, fmt.Errorf("cron=%q: %w (want MIN HOUR DAY MONTH WEEKDAY, e.g. \"0 3 * * *\", a name such as @daily, or @every 2s)", expr, err)
	}
	return s, nil
}

// grace is how late a firing may be and still count as on time: a
// firing later than that, under catchup=none, is recorded as missed. A
// leader change shorter than it delays firings without dropping them. A
// schedule that fires more often than every 2*grace has half its
// period instead (graceOf).
const grace = 5 * time.Second

// graceOf is the grace of a schedule: grace, or half the schedule's
// period after t if that is shorter.
func graceOf(sched robfig.Schedule, t time.Time) time.Duration {
	a := sched.Next(t)
	b := sched.Next(a)
	if a.IsZero() || b.IsZero() {
		return grace
	}
	return min(grace, b.Sub(a)/2)
}

// Validate checks a spec's cron options for the user.
func Validate(s *client.JobSpec) error {
	if s.Cron == "" {
		if s.Catchup != "" || s.Overlap != "" {
			return fmt.Errorf("catchup= and overlap= apply to cron jobs only: add cron=\"...\"")
		}
		return nil
	}
	if _, err := parse(s.Cron); err != nil {
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

// ToWire renders a cron job's schedule with its next firing.
func ToWire(j *fsm.Job) *client.CronStatus {
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
		if sched, err := parse(j.Spec.Cron); err == nil {
			out.Next = sched.Next(c.Through)
		}
	}
	return out
}
