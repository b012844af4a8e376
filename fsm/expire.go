package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Job retention. A finished job leaves the database once it has been
// finished for the retention (the servers' --job-retention), or when more
// than a count of finished jobs are kept (--job-retention-count). The
// leader decides when: it proposes one JobsExpire with its own time and
// the cutoff it derived from it, and Apply removes, in ascending id order,
// exactly the jobs ExpiredJobs names at that index, so every replica drops
// the same jobs at the same index. A job goes only once nothing needs it
// any more:
//   - it has ended (every instance finished);
//   - no held job names it as a dependency (decide reads it again when
//     the held job's other dependencies end);
//   - a cron job (a template) goes only once its schedule ended and all
//     its runs are gone; a run goes on its own, like any job.
//
// Retrying or duplicating a JobsExpire is harmless: it removes what is due
// at its own index, often nothing.

// EventJobsExpired is the event kind of a JobsExpire that removed jobs:
// one event per entry, its detail the count.
const EventJobsExpired = "jobs-expired"

// JobsExpire removes the finished jobs past the retention. Since command
// level 32.
type JobsExpire struct {
	// At is the leader's time when it proposed the entry.
	At time.Time `json:"at"`
	// Before is the cutoff: a job that ended before it goes. Zero sets
	// no age limit.
	Before time.Time `json:"before,omitzero"`
	// Keep, when positive, is how many finished jobs stay at most: the
	// ones that ended earliest go first.
	Keep int `json:"keep,omitempty"`
}

// ExpiredJobs returns, in ascending order, the ids of the jobs a
// JobsExpire with cutoff before and count keep would remove now. The
// leader asks it before proposing one; Apply removes what it says.
func (v View) ExpiredJobs(before time.Time, keep int) []uint64 {
	return v.d.expiredJobs(before, keep)
}

// expiredJobs is ExpiredJobs. It reads the state only: the order it walks
// the maps in reaches no result, which is sorted.
func (d *db) expiredJobs(before time.Time, keep int) []uint64 {
	if before.IsZero() && keep <= 0 {
		return nil
	}
	// The jobs a held job still waits for stay.
	needed := make(map[uint64]struct{})
	for _, ids := range d.dependents {
		for _, id := range ids {
			j := d.jobs[id]
			if j == nil || !j.held() {
				continue
			}
			for _, dep := range j.Spec.Dependencies() {
				needed[dep.JobID] = struct{}{}
			}
		}
	}
	type candidate struct {
		id    uint64
		ended time.Time
	}
	var finished []candidate
	var templates []*Job
	for id, j := range d.jobs {
		switch {
		case j.Cron != nil:
			if j.Cron.Ended {
				templates = append(templates, j)
			}
		case !j.done:
		default:
			if _, ok := needed[id]; ok {
				continue
			}
			// Without a count only the jobs past the cutoff matter.
			if end := jobEnd(j); keep > 0 || end.Before(before) {
				finished = append(finished, candidate{id, end})
			}
		}
	}
	over := 0
	if keep > 0 {
		over = max(len(finished)-keep, 0)
		// Oldest first, so that the count keeps the latest ended.
		slices.SortFunc(finished, func(a, b candidate) int {
			if c := a.ended.Compare(b.ended); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
	}
	gone := make(map[uint64]struct{})
	var out []uint64
	for i, c := range finished {
		if i < over || !before.IsZero() && c.ended.Before(before) {
			gone[c.id] = struct{}{}
			out = append(out, c.id)
		}
	}
	for _, j := range templates {
		if !before.IsZero() && !j.Cron.EndedAt.Before(before) {
			continue
		}
		if _, ok := needed[j.ID]; ok || !runsGone(d, j, gone) {
			continue
		}
		out = append(out, j.ID)
	}
	slices.Sort(out)
	return out
}

// runsGone reports whether every run of cron job j has left the database
// or is in gone.
func runsGone(d *db, j *Job, gone map[uint64]struct{}) bool {
	for _, id := range j.Cron.Runs {
		if _, ok := d.jobs[id]; !ok {
			continue
		}
		if _, ok := gone[id]; !ok {
			return false
		}
	}
	return true
}

// jobEnd is when a finished job ended: its last instance's end, or, for
// a job none of whose instances recorded one, its submit time.
func jobEnd(j *Job) time.Time {
	if t := endedAt(j); !t.IsZero() {
		return t
	}
	return j.SubmittedAt
}

// applyJobsExpire removes the jobs due at index under c, with one event
// saying how many. Result.Affected counts them.
func (d *db) applyJobsExpire(index uint64, c *JobsExpire) *Result {
	ids := d.expiredJobs(c.Before, c.Keep)
	for _, id := range ids {
		d.removeJob(d.jobs[id])
	}
	if len(ids) > 0 {
		detail := fmt.Sprintf("%d finished jobs removed (jobs %d..%d", len(ids), ids[0], ids[len(ids)-1])
		if !c.Before.IsZero() {
			detail += ", ended before " + stamp(c.Before)
		}
		if c.Keep > 0 {
			detail += fmt.Sprintf(", keeping at most %d", c.Keep)
		}
		d.event(index, c.At, EventJobsExpired, 0, -1, 0, "", detail+")")
	}
	return &Result{Index: index, Affected: len(ids)}
}

// removeJob takes a finished job out of the records and every index that
// names it.
func (d *db) removeJob(j *Job) {
	for i := range j.Instances {
		d.unsetIndexes(j.ID, &j.Instances[i])
	}
	if !j.done {
		d.counts(j.Queue).Jobs--
		d.addUser(j, -1, 0, 0)
	}
	if c, ok := d.queues[j.Queue]; ok && *c == (queueCounts{}) {
		delete(d.queues, j.Queue)
	}
	if j.IdempotencyKey != "" && d.byIdempotency[j.IdempotencyKey] == j.ID {
		delete(d.byIdempotency, j.IdempotencyKey)
	}
	if ids := slices.DeleteFunc(d.byName[j.Name], func(id uint64) bool { return id == j.ID }); len(ids) == 0 {
		delete(d.byName, j.Name)
	} else {
		d.byName[j.Name] = ids
	}
	delete(d.dependents, j.ID)
	delete(d.crons, j.ID)
	delete(d.jobs, j.ID)
}

// JobExpired reports whether job id existed and has since been removed by
// a JobsExpire: ids are given in order and only a JobsExpire removes a
// job, so an id below the next one that the database lacks is one.
func (v View) JobExpired(id uint64) bool {
	_, ok := v.d.jobs[id]
	return !ok && id > 0 && id < v.d.nextJobID
}
