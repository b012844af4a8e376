package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// cronSummary is what checkCron saw of the workload's cron job: the
// scheduled times it decided, how many ran and how many it skipped.
type cronSummary struct {
	Decided, Runs, Skipped int
}

// cronSlack is how far the first decided time may lie after submit plus
// one period, and the last before the schedule's end: a firing is decided
// after the commit or timer that finds it due.
const cronSlack = 2 * cronPeriod

// checkCron judges the workload's cron job (ack.Cron) by its own record
// and its runs: every scheduled time on the cronPeriod grid from its
// first to the last it decided was decided exactly once, as a run or as a
// skip with its reason (a time missed while no server led, under
// catchup=last); no time off the grid; the first within a period (and
// slack) of the submit and the last within a period (and slack) of the
// schedule's end; and every run that exited 0 left ledger records.
func checkCron(acks []ack, jobs map[uint64]client.Job, recs []record) ([]violation, cronSummary) {
	var (
		vs  []violation
		sum cronSummary
	)
	spans := spansOf(recs)
	for _, a := range acks {
		if !a.Cron {
			continue
		}
		add := func(format string, args ...any) {
			vs = append(vs, violation{Kind: vCron, Job: a.ID, Instance: -1, Detail: fmt.Sprintf(format, args...)})
		}
		job, ok := jobs[a.ID]
		if !ok {
			continue // checkDB reports it
		}
		if job.Cron == nil {
			add("the cron job has no schedule record")
			continue
		}
		decided := map[time.Time][]string{}
		for _, id := range job.Cron.Runs {
			rj, ok := jobs[id]
			if !ok {
				add("its run job %d is missing from the database", id)
				continue
			}
			t := rj.Scheduled.UTC()
			decided[t] = append(decided[t], fmt.Sprintf("run job %d", id))
			sum.Runs++
			if rj.State == client.JobDone && spans[id] == nil {
				add("run job %d (scheduled %s) is done but left no ledger record", id, t.Format(time.TimeOnly))
			}
		}
		for _, sk := range job.Cron.Skips {
			t := sk.Scheduled.UTC()
			decided[t] = append(decided[t], "skipped ("+sk.Reason+")")
			sum.Skipped++
		}
		if job.Cron.Skipped > len(job.Cron.Skips) {
			add("%d skips recorded, only the latest %d kept: the check needs them all", job.Cron.Skipped, len(job.Cron.Skips))
		}
		times := slices.SortedFunc(func(yield func(time.Time) bool) {
			for t := range decided {
				if !yield(t) {
					return
				}
			}
		}, time.Time.Compare)
		sum.Decided = len(times)
		if len(times) == 0 {
			add("no firing was decided between its submit at %s and its end", job.SubmittedAt.Format(time.TimeOnly))
			continue
		}
		first, last := times[0], times[len(times)-1]
		for _, t := range times {
			if how := decided[t]; len(how) > 1 {
				add("scheduled time %s decided %d times: %s", t.Format(time.TimeOnly), len(how), strings.Join(how, ", "))
			}
			if t.Sub(first)%cronPeriod != 0 {
				add("scheduled time %s is off the %s grid that starts at %s", t.Format(time.TimeOnly), cronPeriod, first.Format(time.TimeOnly))
			}
		}
		for t := first; !t.After(last); t = t.Add(cronPeriod) {
			if len(decided[t]) == 0 {
				add("scheduled time %s was missed: neither run nor recorded skipped", t.Format(time.TimeOnly))
			}
		}
		if late := first.Sub(job.SubmittedAt); late > cronPeriod+cronSlack {
			add("its first decided time %s is %s after its submit: the firings before it were missed", first.Format(time.TimeOnly), late.Round(time.Millisecond))
		}
		if end := job.Cron.EndedAt; !end.IsZero() && end.Sub(last) > cronPeriod+cronSlack {
			add("its last decided time %s is %s before its schedule ended: the firings after it were missed", last.Format(time.TimeOnly), end.Sub(last).Round(time.Millisecond))
		}
	}
	return vs, sum
}
