package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// endSlack is how much later than the database's end of an instance a
// ledger start must be to count as a run after the end: the ledger clock
// has 10 ms steps and is converted from wall-clock time.
const endSlack = 0.25

// instKey names one instance of one job.
type instKey struct {
	Job      uint64
	Instance int
}

// attemptRun is what the ledger shows of one attempt: when it started (each
// start, if more than one), the last moment it was seen alive, its end.
type attemptRun struct {
	Attempt uint64
	Starts  []record
	First   float64 // first record of any kind
	Last    float64 // last record of any kind: it was alive until at least then
	End     *record
}

// hosts lists where the attempt's starts happened.
func (r attemptRun) hosts() string {
	var hs []string
	for _, s := range r.Starts {
		hs = append(hs, fmt.Sprintf("%s@%.2f", s.Host, s.T))
	}
	return strings.Join(hs, ",")
}

// runsOf groups the records by instance and attempt.
func runsOf(recs []record) map[instKey][]*attemptRun {
	byInst := map[instKey]map[uint64]*attemptRun{}
	for _, r := range recs {
		k := instKey{r.Job, r.Instance}
		if byInst[k] == nil {
			byInst[k] = map[uint64]*attemptRun{}
		}
		a := byInst[k][r.Attempt]
		if a == nil {
			a = &attemptRun{Attempt: r.Attempt, First: r.T, Last: r.T}
			byInst[k][r.Attempt] = a
		}
		a.First, a.Last = min(a.First, r.T), max(a.Last, r.T)
		switch r.Kind {
		case recStart:
			a.Starts = append(a.Starts, r)
		case recEnd:
			if a.End == nil || r.T > a.End.T {
				a.End = &r
			}
		}
	}
	out := map[instKey][]*attemptRun{}
	for k, m := range byInst {
		runs := slices.Collect(maps.Values(m))
		slices.SortFunc(runs, func(a, b *attemptRun) int { return cmp.Compare(a.First, b.First) })
		out[k] = runs
	}
	return out
}

// checkLedger judges what ran against the database (the consistent read
// at the end, by job id):
//
//   - an attempt started twice (a Start carried out twice, or two copies
//     of it) is doubled;
//   - two attempts of one instance alive at the same moment are doubled:
//     the later one started before the last record of the earlier one;
//   - a job without a restart policy that ran more than one attempt ran
//     again: doubled;
//   - an attempt newer than the database's last, or a start later than
//     the database's end of a finished instance, ran after the end: doubled;
//   - an instance the database says exited 0 whose last attempt has no
//     end record (or an end with another status) did not do its work:
//     lost; so is a job that ran but is missing from the database.
func checkLedger(recs []record, jobs map[uint64]client.Job, toLedger clock, freezes []freeze) ([]violation, []string) {
	var (
		vs    []violation
		notes []string
	)
	runs := runsOf(recs)
	keys := slices.SortedFunc(maps.Keys(runs), func(a, b instKey) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Instance, b.Instance))
	})
	missing := map[uint64]bool{}
	for _, k := range keys {
		rs := runs[k]
		add := func(kind string, at float64, format string, args ...any) {
			vs = append(vs, violation{Kind: kind, Job: k.Job, Instance: k.Instance, At: at, Detail: fmt.Sprintf(format, args...)})
		}
		for _, r := range rs {
			if len(r.Starts) > 1 {
				add(vDoubled, r.Starts[1].T, "attempt %d started %d times (%s)", r.Attempt, len(r.Starts), r.hosts())
			}
		}
		for i, a := range rs {
			for _, b := range rs[i+1:] {
				if b.First < a.Last {
					if f, ok := frozenOverlap(a, b, freezes); ok {
						notes = append(notes, frozenNote(k, a, b, f))
						continue
					}
					add(vDoubled, b.First, "attempt %d (%s, seen %.2f-%.2f) started while attempt %d (%s, seen %.2f-%.2f) ran: %.2fs overlap at least",
						b.Attempt, b.hosts(), b.First, b.Last, a.Attempt, a.hosts(), a.First, a.Last, min(a.Last, b.Last)-b.First)
				}
			}
		}
		job, ok := jobs[k.Job]
		if !ok {
			if !missing[k.Job] {
				missing[k.Job] = true
				vs = append(vs, violation{Kind: vLost, Job: k.Job, Instance: -1, At: rs[0].First,
					Detail: "ran (the ledger has it) but is missing from the database"})
			}
			continue
		}
		if !restartable(job.Spec) && len(rs) > 1 {
			add(vDoubled, rs[1].First, "has no restart policy but ran %d attempts (%s)", len(rs), attemptList(rs))
		}
		if k.Instance >= len(job.Instances) {
			add(vDoubled, rs[0].First, "ran but the job has only %d instances", len(job.Instances))
			continue
		}
		in := job.Instances[k.Instance]
		for _, r := range rs {
			if r.Attempt > in.Attempt {
				add(vDoubled, r.First, "attempt %d ran but the database's last attempt is %d", r.Attempt, in.Attempt)
			}
		}
		if in.Finished() && !in.EndedAt.IsZero() {
			end := toLedger(in.EndedAt)
			for _, r := range rs {
				for _, s := range r.Starts {
					if s.T > end+endSlack {
						add(vDoubled, s.T, "attempt %d started on %s at %.2f, after the instance ended (%s, attempt %d) at %.2f",
							r.Attempt, s.Host, s.T, in.State, in.Attempt, end)
					}
				}
			}
		}
		if in.State == client.InstanceExited {
			last := findRun(rs, in.Attempt)
			switch {
			case last == nil:
				add(vLost, 0, "the database says attempt %d exited 0 but the ledger has no record of it", in.Attempt)
			case last.End == nil:
				add(vLost, last.Last, "the database says attempt %d exited 0 but it never wrote its end (last seen %.2f on %s)",
					in.Attempt, last.Last, last.hosts())
			case last.End.Status != "0":
				add(vLost, last.End.T, "the database says attempt %d exited 0 but the job ended with status %s", in.Attempt, last.End.Status)
			}
		}
	}
	return vs, notes
}

// findRun returns the run of attempt, or nil.
func findRun(rs []*attemptRun, attempt uint64) *attemptRun {
	for _, r := range rs {
		if r.Attempt == attempt {
			return r
		}
	}
	return nil
}

func attemptList(rs []*attemptRun) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d on %s", r.Attempt, r.hosts()))
	}
	return strings.Join(parts, "; ")
}

// pinTimes gives a violation about an instance (or a job) that has no
// time of its own the time of that instance's (or job's) last ledger
// record, so the report can show the faults around it.
func pinTimes(vs []violation, recs []record) {
	last := map[instKey]float64{}
	for _, r := range recs {
		for _, k := range []instKey{{r.Job, r.Instance}, {r.Job, -1}} {
			last[k] = max(last[k], r.T)
		}
	}
	for i := range vs {
		if vs[i].At == 0 && vs[i].Job != 0 {
			vs[i].At = last[instKey{vs[i].Job, vs[i].Instance}]
		}
	}
}
