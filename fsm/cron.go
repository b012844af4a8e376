package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Cron jobs (cron=, catchup=, overlap=). A cron job is a template: it has
// no instances and runs nothing itself. Each firing of its schedule is one
// CronFire entry, proposed by the leader, carrying the scheduled time;
// Apply makes one run job per (cron job, scheduled time). The job records
// Through, the latest scheduled time decided (run or skipped): a CronFire
// for a time at or before it changes nothing, so a firing that a new
// leader proposes again, or that two leaders propose, runs once. The
// leader computes the next firing from the committed Through (CronDue),
// never from its own memory, so a leader change neither doubles nor drops
// a firing. The schedule itself is parsed by the leader only (the server
// package): Apply reads no clock and no time zone database.

// Catch-up policies: what a firing whose time passed while no leader
// could propose it does.
const (
	// CatchupLast runs once for the most recent missed time; the earlier
	// ones are recorded as missed. The default.
	CatchupLast = "last"
	// CatchupNone records every missed time, runs none, and waits for the
	// next.
	CatchupNone = "none"
)

// Overlap policies: what a firing does while the cron job's previous run
// has not ended.
const (
	// OverlapSkip records the firing as skipped. The default.
	OverlapSkip = "skip"
	// OverlapAllow runs it alongside.
	OverlapAllow = "allow"
)

// JobScheduled is the state of a cron job whose schedule runs; once netkill
// ends it, the job is JobKilled.
const JobScheduled = "scheduled"

// Cron events.
const (
	EventCronFired   = "cron-fired"
	EventCronSkipped = "cron-skipped"
	EventCronEnded   = "cron-ended"
)

// MaxCronSkips bounds the skipped firings a cron job keeps, newest last;
// CronState.Skipped counts them all.
const MaxCronSkips = 256

// MaxCronMissed bounds the missed times one CronFire lists; it counts the
// others in MissedMore.
const MaxCronMissed = 64

// ScheduledTimeEnv is the variable a run's environment holds its
// scheduled time in, as RFC 3339.
const ScheduledTimeEnv = "NETMGR_SCHEDULED_TIME"

// CronState is what a cron job's schedule has done.
type CronState struct {
	// Through is the latest scheduled time decided: every time of the
	// schedule at or before it has run or been skipped. It starts at the
	// submit time: a schedule fires only after it was submitted.
	Through time.Time `json:"through"`
	// Runs are the run jobs' ids, in firing order.
	Runs []uint64 `json:"runs,omitempty"`
	// Skips are the latest MaxCronSkips firings that did not run, oldest
	// first; Skipped counts all of them, and Missed the times a catch-up
	// counted without listing them (a long outage of a frequent schedule).
	Skips   []CronSkip `json:"skips,omitempty"`
	Skipped int        `json:"skipped,omitempty"`
	Missed  int        `json:"missed,omitempty"`
	// Ended is set when netkill ended the schedule, at EndedAt by EndedBy.
	Ended   bool      `json:"ended,omitempty"`
	EndedAt time.Time `json:"ended_at,omitzero"`
	EndedBy string    `json:"ended_by,omitempty"`
}

// CronSkip is one scheduled time that made no run, and why.
type CronSkip struct {
	Scheduled time.Time `json:"scheduled"`
	Reason    string    `json:"reason"`
}

// IsCron reports whether the job is a cron job (a template).
func (j *Job) IsCron() bool { return j.Cron != nil }

// LastRun is the id of the cron job's latest run, 0 before the first.
func (c *CronState) LastRun() uint64 {
	if len(c.Runs) == 0 {
		return 0
	}
	return c.Runs[len(c.Runs)-1]
}

// validateCronSpec checks the cron options of a spec. The expression
// itself is the server's to check: Apply does not parse it.
func validateCronSpec(s *JobSpec) error {
	if s.Cron == "" {
		if s.Catchup != "" || s.Overlap != "" {
			return fmt.Errorf("%w: catchup and overlap apply to cron jobs only", ErrInvalidSpec)
		}
		return nil
	}
	switch s.Catchup {
	case "", CatchupLast, CatchupNone:
	default:
		return fmt.Errorf("%w: catchup: %q is not none or last", ErrInvalidSpec, s.Catchup)
	}
	switch s.Overlap {
	case "", OverlapSkip, OverlapAllow:
	default:
		return fmt.Errorf("%w: overlap: %q is not skip or allow", ErrInvalidSpec, s.Overlap)
	}
	if s.HasDependencies() {
		return fmt.Errorf("%w: a cron job cannot wait for other jobs (after=, afterok=, afternotok=)", ErrInvalidSpec)
	}
	return nil
}

// CatchupPolicy is the spec's catch-up policy, its default filled in.
func (s *JobSpec) CatchupPolicy() string {
	if s.Catchup == "" {
		return CatchupLast
	}
	return s.Catchup
}

// OverlapPolicy is the spec's overlap policy, its default filled in.
func (s *JobSpec) OverlapPolicy() string {
	if s.Overlap == "" {
		return OverlapSkip
	}
	return s.Overlap
}

// applyCronFire decides one firing of a cron job: it records the missed
// times it lists, then runs the scheduled time or records why not. A
// firing at or before the job's Through, or of an ended schedule, changes
// nothing (Result.Stale).
func (d *db) applyCronFire(index uint64, c *CronFire) *Result {
	j, ok := d.jobs[c.JobID]
	if !ok || j.Cron == nil {
		return &Result{Index: index, Err: fmt.Errorf("cron fire of job %d: %w: not a cron job", c.JobID, ErrNoSuchJob)}
	}
	cs := j.Cron
	if cs.Ended || !c.Scheduled.After(cs.Through) {
		return &Result{Index: index, Stale: true}
	}
	d.edit(j)
	j.ModifyIndex = index
	missed := "missed: no leader at its time (catchup=" + j.Spec.CatchupPolicy() + ")"
	for _, t := range c.Missed {
		if t.After(cs.Through) && t.Before(c.Scheduled) {
			d.skipFiring(index, c.At, j, t, missed)
		}
	}
	if c.MissedMore > 0 {
		cs.Missed += c.MissedMore
		cs.Skipped += c.MissedMore
		d.event(index, c.At, EventCronSkipped, j.ID, -1, 0, "", fmt.Sprintf("%d more missed times before %s", c.MissedMore, stamp(c.Scheduled)))
	}
	cs.Through = c.Scheduled
	if c.Skip {
		d.skipFiring(index, c.At, j, c.Scheduled, missed)
		return &Result{Index: index}
	}
	if prev := cs.LastRun(); prev != 0 && j.Spec.OverlapPolicy() == OverlapSkip {
		if p := d.jobs[prev]; p != nil && !p.allFinished() {
			d.skipFiring(index, c.At, j, c.Scheduled, fmt.Sprintf("overlap: run job %d (%s) has not ended (overlap=skip)", p.ID, p.Name))
			return &Result{Index: index}
		}
	}
	res := d.applySubmit(index, &Submit{At: c.At, Owner: j.Owner, Spec: runSpec(j, c.Scheduled)})
	if res.Err != nil {
		d.skipFiring(index, c.At, j, c.Scheduled, "run refused: "+res.Err.Error())
		return &Result{Index: index}
	}
	run := d.jobs[res.JobID]
	run.CronJob, run.Scheduled = j.ID, c.Scheduled
	cs.Runs = append(cs.Runs, run.ID)
	d.event(index, c.At, EventCronFired, j.ID, -1, 0, "", fmt.Sprintf("scheduled %s: run job %d (%s)", stamp(c.Scheduled), run.ID, run.Name))
	return &Result{Index: index, JobID: run.ID}
}

// runSpec is the spec of the run of cron job j scheduled at t: the
// template's, without the cron options, named NAME.OWNER#N, with the
// scheduled time in its environment.
func runSpec(j *Job, t time.Time) JobSpec {
	s := j.Spec
	s.Cron, s.Catchup, s.Overlap = "", "", ""
	s.Name = fmt.Sprintf("%s.%s#%d", j.Name, j.Owner, len(j.Cron.Runs)+1)
	s.Env = append(slices.Clone(s.Env), ScheduledTimeEnv+"="+stamp(t))
	return s
}

// stamp renders a scheduled time as RFC 3339, in UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// skipFiring records that cron job j's time t made no run.
func (d *db) skipFiring(index uint64, at time.Time, j *Job, t time.Time, reason string) {
	cs := j.Cron
	cs.Skipped++
	cs.Skips = append(cs.Skips, CronSkip{Scheduled: t, Reason: reason})
	if n := len(cs.Skips); n > MaxCronSkips {
		cs.Skips = slices.Clone(cs.Skips[n-MaxCronSkips:])
	}
	d.event(index, at, EventCronSkipped, j.ID, -1, 0, "", fmt.Sprintf("scheduled %s: %s", stamp(t), reason))
}

// killCron ends cron job j's schedule and, when c.Runs is set, kills its
// unfinished runs. Killing an ended schedule again with Runs still kills
// the runs.
func (d *db) killCron(index uint64, j *Job, c *Kill) *Result {
	res := &Result{Index: index, JobID: j.ID}
	ended := false
	if !j.Cron.Ended {
		j.Cron.Ended, j.Cron.EndedAt, j.Cron.EndedBy = true, c.At, c.By
		j.KillRequested, j.KilledBy, j.KillSignal = true, c.By, c.Signal
		j.ModifyIndex = index
		delete(d.crons, j.ID)
		ended = true
		d.event(index, c.At, EventCronEnded, j.ID, -1, 0, "", fmt.Sprintf("by=%s runs=%d", c.By, len(j.Cron.Runs)))
	}
	if c.Runs {
		for _, id := range j.Cron.Runs {
			if run := d.jobs[id]; run != nil && !run.allFinished() {
				r := d.applyKill(index, &Kill{At: c.At, JobID: id, By: c.By, Signal: c.Signal})
				res.Signaled += r.Signaled
				res.Dequeued += r.Dequeued
			}
		}
	}
	if !ended && res.Signaled == 0 && res.Dequeued == 0 {
		return &Result{Index: index, JobID: j.ID, Err: fmt.Errorf("kill cron job %d: %w", j.ID, ErrJobFinished)}
	}
	return res
}

// CronJobs returns the cron jobs whose schedule runs, by id: the leader
// asks them, after every commit, what is due.
func (v View) CronJobs() []*Job {
	out := make([]*Job, 0, len(v.d.crons))
	for id := range v.d.crons {
		out = append(out, v.d.jobs[id])
	}
	slices.SortFunc(out, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
