package fsm

import (
	"fmt"
	"time"
)

// Dependent jobs (after=, afterok=, afternotok=). A job that names
// dependencies is submitted held: its instances wait in InstanceHeld,
// outside the queue. Whenever a job ends (its last instance finishes), the
// jobs held for it are decided in ascending id order, at that entry's
// index: released (their instances become queued, for the leader's next
// pass) once every dependency allows them, or cancelled (their instances
// end InstanceCancelled, with the reason) as soon as one never can. A
// cancelled job has ended too, so its own dependents are decided in turn.
// Dependencies name only jobs that exist at submit, which have lower ids,
// so no cycle can be built.

// Dependency kinds, as the job language names them.
const (
	DepAfter      = "after"
	DepAfterOK    = "afterok"
	DepAfterNotOK = "afternotok"
)

// Dependency is one job a job waits for and how.
type Dependency struct {
	Kind  string
	JobID uint64
}

// Dependencies lists the job's dependencies: after, then afterok, then
// afternotok, each in the order the spec gives.
func (s *JobSpec) Dependencies() []Dependency {
	out := make([]Dependency, 0, len(s.After)+len(s.AfterOK)+len(s.AfterNotOK))
	for _, l := range []struct {
		kind string
		ids  []uint64
	}{{DepAfter, s.After}, {DepAfterOK, s.AfterOK}, {DepAfterNotOK, s.AfterNotOK}} {
		for _, id := range l.ids {
			out = append(out, Dependency{Kind: l.kind, JobID: id})
		}
	}
	return out
}

// Succeeded reports whether an ended job succeeded: every instance exited
// with status 0. A failed, signalled, lost, killed or cancelled job did
// not.
func (j *Job) Succeeded() bool { return j.State() == JobDone }

// DependencyVerdict is what one dependency says about its dependent now.
type DependencyVerdict int

// The verdicts.
const (
	// DepWaiting: the dependency has not ended.
	DepWaiting DependencyVerdict = iota
	// DepSatisfied: it ended in a way that lets the dependent run.
	DepSatisfied
	// DepNever: it ended in a way that means the dependent never runs.
	DepNever
)

// Verdict says what dependency dep, whose job is j (nil when it no longer
// exists, which it always does today), says now.
func (dep Dependency) Verdict(j *Job) DependencyVerdict {
	if j == nil {
		return DepNever
	}
	if !j.allFinished() {
		return DepWaiting
	}
	ok := j.Succeeded()
	switch {
	case dep.Kind == DepAfter, dep.Kind == DepAfterOK && ok, dep.Kind == DepAfterNotOK && !ok:
		return DepSatisfied
	}
	return DepNever
}

// held reports whether the job waits for its dependencies.
func (j *Job) held() bool {
	for i := range j.Instances {
		if j.Instances[i].State == InstanceHeld {
			return true
		}
	}
	return false
}

// validateDependencies checks that every dependency of a job about to get
// id names an earlier job that exists.
func (d *db) validateDependencies(id uint64, s *JobSpec) error {
	for _, dep := range s.Dependencies() {
		other, ok := d.jobs[dep.JobID]
		if !ok || dep.JobID >= id {
			return fmt.Errorf("%w: %s: job %d: %w", ErrInvalidSpec, dep.Kind, dep.JobID, ErrNoSuchJob)
		}
		if other.Cron != nil {
			return fmt.Errorf("%w: %s: job %d is a cron job, which never ends: name one of its runs", ErrInvalidSpec, dep.Kind, dep.JobID)
		}
	}
	return nil
}

// indexDependent files a held job under each job it waits for.
func (d *db) indexDependent(j *Job) {
	for _, dep := range j.Spec.Dependencies() {
		ids := d.dependents[dep.JobID]
		if n := len(ids); n > 0 && ids[n-1] == j.ID {
			continue // named twice
		}
		d.dependents[dep.JobID] = append(ids, j.ID)
	}
}

// resolveDependents decides, at index, the held jobs that wait for dep,
// which has just ended.
func (d *db) resolveDependents(dep *Job, index uint64) {
	ids := d.dependents[dep.ID]
	delete(d.dependents, dep.ID)
	for _, id := range ids {
		if j := d.jobs[id]; j != nil && j.held() {
			d.decide(j, index, endedAt(dep))
			d.flushEnded(index) // j, if cancelled, and its own dependents
		}
	}
}

// decide releases or cancels held job j at index if its dependencies have
// decided, at time at (when the dependency that decided ended, or the
// submit's time when they had ended before it); it leaves it held
// otherwise.
func (d *db) decide(j *Job, index uint64, at time.Time) {
	waiting := false
	for _, dep := range j.Spec.Dependencies() {
		other := d.jobs[dep.JobID]
		switch dep.Verdict(other) {
		case DepWaiting:
			waiting = true
		case DepNever:
			d.cancelHeld(j, index, at, CancelReason(dep, other))
			return
		}
	}
	if waiting {
		return
	}
	d.edit(j)
	for i := range j.Instances {
		if in := &j.Instances[i]; in.State == InstanceHeld {
			d.setState(j.ID, in, InstanceQueued, index)
		}
	}
	j.ModifyIndex = index
	d.event(index, at, EventJobReleased, j.ID, -1, 0, "", "dependencies satisfied")
}

// cancelHeld ends held job j: its instances never run.
func (d *db) cancelHeld(j *Job, index uint64, at time.Time, reason string) {
	d.edit(j)
	j.ModifyIndex = index
	d.event(index, at, EventJobCancelled, j.ID, -1, 0, "", reason)
	for i := range j.Instances {
		if in := &j.Instances[i]; in.State == InstanceHeld {
			in.Reason = reason
			in.EndedAt = at
			d.setState(j.ID, in, InstanceCancelled, index)
		}
	}
}

// CancelReason says why dependency dep, of job other, means its dependent
// never runs: "dependency: afterok job 12 (build) failed".
func CancelReason(dep Dependency, other *Job) string {
	if other == nil {
		return fmt.Sprintf("dependency: %s job %d does not exist", dep.Kind, dep.JobID)
	}
	return fmt.Sprintf("dependency: %s job %d (%s) %s", dep.Kind, dep.JobID, other.Name, other.State())
}

// endedAt is when a job ended: the latest end among its instances (zero
// when j is nil or none has an end time).
func endedAt(j *Job) time.Time {
	var t time.Time
	if j == nil {
		return t
	}
	for i := range j.Instances {
		if e := j.Instances[i].EndedAt; e.After(t) {
			t = e
		}
	}
	return t
}
