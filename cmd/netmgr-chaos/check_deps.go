package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// depSpan is what the ledger says of one job: when its first attempt
// started and when its last record was written, on the ledger's clock.
type depSpan struct {
	firstStart, lastRecord float64
	started, recorded      bool
}

// spansOf returns each job's depSpan from the ledger.
func spansOf(recs []record) map[uint64]*depSpan {
	spans := make(map[uint64]*depSpan)
	for _, r := range recs {
		s := spans[r.Job]
		if s == nil {
			s = &depSpan{}
			spans[r.Job] = s
		}
		if r.Kind == recStart && (!s.started || r.T < s.firstStart) {
			s.firstStart, s.started = r.T, true
		}
		if !s.recorded || r.T > s.lastRecord {
			s.lastRecord, s.recorded = r.T, true
		}
	}
	return spans
}

// checkDeps judges the dependency chains (ack.After, ack.AfterOK): a
// dependent job starts only after its dependency has ended, by the jobs'
// own ledger records; an afterok job runs when its dependency succeeded
// and ends cancelled(dependency), never having started, when it did not;
// an after job runs however its dependency ended. A dependency lost with
// its machine may have gone on running there unseen, so a dependent that
// overlaps such a one is a note, not a violation.
func checkDeps(acks []ack, jobs map[uint64]client.Job, recs []record) (vs []violation, notes []string) {
	spans := spansOf(recs)
	sorted := slices.SortedFunc(slices.Values(acks), func(a, b ack) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range sorted {
		job, ok := jobs[a.ID]
		if !ok {
			continue // checkDB reports it
		}
		mine := spans[a.ID]
		type dep struct {
			kind string
			id   uint64
		}
		var deps []dep
		for _, id := range a.After {
			deps = append(deps, dep{depAfter, id})
		}
		for _, id := range a.AfterOK {
			deps = append(deps, dep{depAfterOK, id})
		}
		for _, d := range deps {
			dj, ok := jobs[d.id]
			if !ok {
				vs = append(vs, violation{Kind: vDependency, Job: a.ID, Instance: -1,
					Detail: fmt.Sprintf("its dependency job %d (%s) is missing from the database", d.id, d.kind)})
				continue
			}
			never := d.kind == depAfterOK && dj.State != client.JobDone
			switch {
			case never && job.State != client.JobCancelled:
				vs = append(vs, violation{Kind: vDependency, Job: a.ID, Instance: -1,
					Detail: fmt.Sprintf("afterok=%d, which ended %s, but the job is %s, not %s", d.id, dj.State, job.State, client.JobCancelled)})
			case never && mine != nil && mine.started:
				vs = append(vs, violation{Kind: vDependency, Job: a.ID, Instance: -1, At: mine.firstStart,
					Detail: fmt.Sprintf("afterok=%d, which ended %s, yet the job started", d.id, dj.State)})
			case !never && job.State == client.JobCancelled && revised(job, dj):
				// Decided on an end a late result changed: an instance lost
				// with its machine whose stub came back with its exit.
				notes = append(notes, fmt.Sprintf("job %d was cancelled (%s); its dependency job %d has since ended %s: a result that came back after the machine was given up",
					a.ID, job.Instances[0].Reason, d.id, dj.State))
			case !never && job.State == client.JobCancelled:
				vs = append(vs, violation{Kind: vDependency, Job: a.ID, Instance: -1,
					Detail: fmt.Sprintf("%s=%d, which ended %s, yet the job was cancelled", d.kind, d.id, dj.State)})
			}
			// The ledger clock (/proc/uptime) ticks every 10 ms, and a
			// dependent job starts some 5 ms after its dependency's end:
			// a start in the tick of the dependency's last record tells
			// nothing of their order. Only a start in an earlier tick is
			// one before the end.
			theirs := spans[d.id]
			if mine == nil || !mine.started || theirs == nil || !theirs.recorded || mine.firstStart >= theirs.lastRecord {
				continue
			}
			detail := fmt.Sprintf("started at %.2f, before its dependency job %d (%s) ended: its last ledger record is at %.2f",
				mine.firstStart, d.id, d.kind, theirs.lastRecord)
			if lostAny(dj) {
				notes = append(notes, fmt.Sprintf("job %d %s (its dependency was lost with its machine and may have gone on running unseen)", a.ID, detail))
				continue
			}
			vs = append(vs, violation{Kind: vDependency, Job: a.ID, Instance: -1, At: mine.firstStart, Detail: detail})
		}
	}
	return vs, notes
}

// revised reports whether cancelled job j's reason names its dependency
// dep in a state other than the one dep ended in: the cancellation was
// decided on an end that a later result revised.
func revised(j, dep client.Job) bool {
	if len(j.Instances) == 0 {
		return false
	}
	r := j.Instances[0].Reason
	return strings.Contains(r, fmt.Sprintf("job %d ", dep.ID)) && !strings.HasSuffix(r, " "+dep.State)
}

// lostAny reports whether an instance of j ended lost with its machine.
func lostAny(j client.Job) bool {
	return slices.ContainsFunc(j.Instances, func(in client.Instance) bool { return in.State == client.InstanceLost })
}

// chained counts the acknowledged jobs that belong to dependency chains:
// those that name a dependency, and those another names.
func chained(acks []ack) int {
	in := make(map[uint64]bool)
	for _, a := range acks {
		for _, id := range append(slices.Clone(a.After), a.AfterOK...) {
			in[id], in[a.ID] = true, true
		}
	}
	return len(in)
}
