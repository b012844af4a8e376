package fsm

import "fmt"

// applySuspend marks the job's running instances suspended; the leader
// sends SIGSTOP to their process groups. They keep their slots.
func (d *db) applySuspend(index uint64, c *JobControl) *Result {
	return d.control(index, c, "suspend", func(j *Job, in *Instance) bool {
		if in.State != InstanceRunning {
			return false
		}
		in.SuspendIndex = index
		d.setState(j.ID, in, InstanceSuspended, index)
		return true
	})
}

// applyResume marks the job's suspended instances running again; the
// leader sends SIGCONT.
func (d *db) applyResume(index uint64, c *JobControl) *Result {
	return d.control(index, c, "resume", func(j *Job, in *Instance) bool {
		if in.State != InstanceSuspended || in.lent() {
			return false // a preemption's victim resumes when its preemptor ends
		}
		in.ResumeIndex = index
		d.setState(j.ID, in, InstanceRunning, index)
		return true
	})
}

// applyRestartJob starts every instance again with a new attempt: an
// active attempt is marked for the leader to end (its CHILD_TERM queues the
// next attempt at once), a finished one is queued again now, a queued one
// is left waiting.
func (d *db) applyRestartJob(index uint64, c *JobControl) *Result {
	return d.control(index, c, "restart", func(j *Job, in *Instance) bool {
		switch {
		case in.Active():
			in.RestartRequested = true
			in.ModifyIndex = index
			return true
		case in.Finished():
			d.newAttempt(j, in, c.At, 0, index)
			return true
		}
		return false
	})
}

// control applies fn to each instance of a job that is not being killed
// and counts those it affected.
func (d *db) control(index uint64, c *JobControl, what string, fn func(*Job, *Instance) bool) *Result {
	j, ok := d.jobs[c.JobID]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("%s job %d: %w", what, c.JobID, ErrNoSuchJob)}
	}
	if j.KillRequested {
		return &Result{Index: index, JobID: j.ID, Err: fmt.Errorf("%s job %d: it is being killed: %w", what, j.ID, ErrJobFinished)}
	}
	d.edit(j)
	res := &Result{Index: index, JobID: j.ID}
	for i := range j.Instances {
		if fn(j, &j.Instances[i]) {
			res.Affected++
		}
	}
	if res.Affected > 0 {
		j.ModifyIndex = index
		d.owedSends++ // owed SIGSTOP, SIGCONT or the restart's signal
	}
	return res
}
