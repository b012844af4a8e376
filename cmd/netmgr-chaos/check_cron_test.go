package main

import (
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func TestCheckCron(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	sched := func(i int) time.Time { return t0.Add(time.Duration(i) * cronPeriod) }
	// Job 1 is the cron job, submitted at t0 - 1s; runs 2, 3 and 5 ran the
	// times 0, 1 and 3; time 2 was skipped; the schedule ended after time 3.
	build := func(runs map[uint64]int, skips []int, ended time.Time) map[uint64]client.Job {
		jobs := map[uint64]client.Job{}
		st := &client.CronStatus{Schedule: cronSchedule, EndedAt: ended, Ended: !ended.IsZero()}
		for id, i := range runs {
			st.Runs = append(st.Runs, id)
			jobs[id] = client.Job{ID: id, State: client.JobDone, CronJob: 1, Scheduled: sched(i)}
		}
		for _, i := range skips {
			st.Skips = append(st.Skips, client.CronSkip{Scheduled: sched(i), Reason: "missed while no server led"})
			st.Skipped++
		}
		jobs[1] = client.Job{ID: 1, SubmittedAt: t0.Add(-time.Second), Cron: st}
		return jobs
	}
	ledger := func(ids ...string) []record {
		var recs []record
		for _, id := range ids {
			recs = append(recs, ledgerOf(t, "start "+id+" 0 1 stub1 10.0\nend "+id+" 0 1 stub1 11.0 0\n")...)
		}
		return recs
	}
	acks := []ack{{ID: 1, Cron: true}}
	end := sched(3).Add(time.Second)
	for _, tc := range []struct {
		name string
		jobs map[uint64]client.Job
		recs []record
		want string // "" for no violation
	}{
		{"every time once", build(map[uint64]int{2: 0, 3: 1, 5: 3}, []int{2}, end), ledger("2", "3", "5"), ""},
		{"a time missed", build(map[uint64]int{2: 0, 3: 1, 5: 3}, nil, end), ledger("2", "3", "5"), "was missed"},
		{"a time run twice", build(map[uint64]int{2: 0, 3: 1, 4: 1, 5: 2}, nil, sched(2).Add(time.Second)), ledger("2", "3", "4", "5"), "decided 2 times"},
		{"run and skipped", build(map[uint64]int{2: 0, 3: 1}, []int{1}, sched(1).Add(time.Second)), ledger("2", "3"), "decided 2 times"},
		{"stopped deciding long before its end", build(map[uint64]int{2: 0}, nil, sched(5)), ledger("2"), "before its schedule ended"},
		{"a done run that never ran", build(map[uint64]int{2: 0, 3: 1}, nil, sched(1).Add(time.Second)), ledger("2"), "left no ledger record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, sum := checkCron(acks, tc.jobs, tc.recs)
			if tc.want == "" {
				if len(vs) > 0 {
					t.Fatalf("violations %v, want none", vs)
				}
				if sum.Decided != 4 || sum.Runs != 3 || sum.Skipped != 1 {
					t.Errorf("summary %+v, want 4 decided, 3 run, 1 skipped", sum)
				}
				return
			}
			for _, v := range vs {
				if v.Kind == vCron && strings.Contains(v.Detail, tc.want) {
					return
				}
			}
			t.Fatalf("violations %v, want a %s one containing %q", vs, vCron, tc.want)
		})
	}
}
