package fsm

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// current finds the instance a CHILD event names and reports whether the
// event is for its current attempt on the machine it was placed on. A
// non-current event is counted on the instance and changes nothing else.
func (d *db) current(index uint64, jobID uint64, idx int, attempt uint64, machine string) (*Job, *Instance, *Result) {
	j, in, err := d.instance(jobID, idx)
	if err != nil {
		return nil, nil, &Result{Index: index, Stale: true, Err: err}
	}
	d.edit(j)
	if in.Attempt != attempt || in.Machine != machine || in.State == InstanceQueued {
		in.StaleEvents++
		in.ModifyIndex = index
		j.ModifyIndex = index
		return nil, nil, &Result{Index: index, Stale: true}
	}
	return j, in, nil
}

// applyChildRegister records that an attempt started (CHILD_REGISTER).
func (d *db) applyChildRegister(index uint64, c *ChildRegister) *Result {
	j, in, res := d.current(index, c.JobID, c.Instance, c.Attempt, c.Machine)
	if res != nil {
		d.fenced(index, c.At, res, c.JobID, c.Instance, c.Attempt, c.Machine, "CHILD_REGISTER")
		return res
	}
	if in.State != InstancePlaced && in.State != InstanceUnknown {
		// A duplicate, or the attempt already ended: nothing to change.
		return &Result{Index: index, JobID: j.ID}
	}
	first := j.neverStarted()
	in.PID = c.PID
	in.StartedAt = c.At
	d.setState(j.ID, in, InstanceRunning, index)
	d.event(index, c.At, EventInstanceStarted, j.ID, in.Index, in.Attempt, c.Machine, fmt.Sprintf("pid %d", c.PID))
	if first {
		d.noteBegin(j, in, index, c.At)
	}
	j.ModifyIndex = index
	return &Result{Index: index, JobID: j.ID}
}

// applyChildEvents applies a batch of CHILD events in order. An event
// with neither or both of Register and Term set makes the entry malformed:
// the replica stops before applying any of it, as for an entry it cannot
// decode.
func (d *db) applyChildEvents(index uint64, c *ChildEvents) *Result {
	for i, ev := range c.Events {
		if (ev.Register == nil) == (ev.Term == nil) {
			panic(fmt.Sprintf("fsm: ChildEvents at index %d: event %d must hold exactly one of register and term", index, i))
		}
	}
	out := &Result{Index: index, Events: make([]*Result, len(c.Events))}
	for i, ev := range c.Events {
		if ev.Register != nil {
			out.Events[i] = d.applyChildRegister(index, ev.Register)
		} else {
			out.Events[i] = d.applyChildTerm(index, ev.Term)
		}
	}
	return out
}

// applyChildTerm records that an attempt ended (CHILD_TERM) and frees its
// slot. A result arriving for an instance already declared lost is still
// recorded: the stub came back with it.
func (d *db) applyChildTerm(index uint64, c *ChildTerm) *Result {
	j, in, res := d.current(index, c.JobID, c.Instance, c.Attempt, c.Machine)
	if res != nil {
		d.fenced(index, c.At, res, c.JobID, c.Instance, c.Attempt, c.Machine, "CHILD_TERM")
		return res
	}
	if in.Finished() && in.State != InstanceLost {
		return &Result{Index: index, JobID: j.ID}
	}
	asked := in.endAsked()
	in.ExitCode = c.ExitCode
	in.Signal = c.Signal
	in.Error = c.Error
	in.Reason = c.Reason
	in.UserMS, in.SysMS, in.MaxRSSKB = c.UserMS, c.SysMS, c.MaxRSSKB
	in.EndedAt = c.At
	in.Leftovers = slices.Clone(c.Leftovers)
	ckpt := checkpointRestart(&j.Spec, in, c)
	var state string
	switch {
	case ckpt && !in.KillRequested:
		state = InstanceExited // a checkpoint exit is the job's deliberate end
	case in.KillRequested || c.Reason != "":
		state = InstanceKilled
	case in.Preempt == PreemptRequeue:
		state = InstancePreempted
		in.Reason = fmt.Sprintf("preempted by job %d", in.PreemptedBy)
	case c.Error != "" || (c.Signal == "" && c.ExitCode != 0):
		state = InstanceFailed
	case c.Signal != "":
		state = InstanceSignaled
	default:
		state = InstanceExited
	}
	d.setState(j.ID, in, state, index)
	d.event(index, c.At, termEventKind(state), j.ID, in.Index, in.Attempt, c.Machine, endDetail(in))
	if len(c.Leftovers) > 0 {
		d.event(index, c.At, EventInstanceLeftovers, j.ID, in.Index, in.Attempt, c.Machine, leftoverDetail(c.Leftovers))
	}
	j.ModifyIndex = index
	switch {
	case j.KillRequested:
	case in.RestartRequested, c.LeaseLost && j.Spec.Restartable(), state == InstancePreempted:
		// Asked for, the lease's or a preemption's: queued again at
		// once, no restart counted.
		d.newAttempt(j, in, c.At, 0, index)
	case c.MachineFault, ckpt:
		// The machine's fault, not the job's, or a checkpoint exit (the
		// next attempt starts from the checkpoint kept): queued again at
		// once, no restart counted, whatever the restart policy.
		d.newAttempt(j, in, c.At, 0, index)
	case restarts(&j.Spec, in):
		in.Restarts++
		d.newAttempt(j, in, c.At, restartBackoff(in.Restarts), index)
	}
	d.gangEnd(j, in, asked, index, c.At)
	return &Result{Index: index, JobID: j.ID}
}

// restarts reports whether the restart policy starts an ended attempt
// again: on-failure after a failure or an unasked-for signal, always after
// any end, never after netkill, and never beyond max_restarts.
func restarts(s *JobSpec, in *Instance) bool {
	limit := s.MaxRestarts
	if limit <= 0 {
		limit = DefaultMaxRestarts
	}
	if in.Restarts >= limit {
		return false
	}
	switch s.Restart {
	case RestartAlways:
		return in.State != InstanceKilled
	case RestartOnFailure:
		return in.State == InstanceFailed || in.State == InstanceSignaled
	}
	return false
}

// restartBackoff is the delay before the n-th restart of an instance:
// 500 ms doubling, at most 30 s. Computed from the command's time, so
// every replica agrees.
func restartBackoff(n int) time.Duration {
	return min(500*time.Millisecond<<min(n-1, 6), 30*time.Second)
}

// newAttempt records how the attempt ended and queues the next one, to be
// placed no sooner than delay after at.
func (d *db) newAttempt(j *Job, in *Instance, at time.Time, delay time.Duration, index uint64) {
	end := currentEnd(in)
	in.History = append(in.History, end)
	d.noteReplaced(j, in, end, index)
	in.Attempt++
	d.event(index, at, EventInstanceRestarted, j.ID, in.Index, in.Attempt, "", fmt.Sprintf("attempt %d on %s ended %s; next after %v", in.Attempt-1, in.Machine, in.State, delay))
	in.Machine, in.Key, in.PID = "", "", 0
	in.ExitCode, in.Signal, in.Error, in.Reason = 0, "", "", ""
	in.RestartRequested = false
	in.PreemptedBy, in.Preempt = 0, ""
	in.SuspendIndex, in.ResumeIndex = 0, 0
	in.UserMS, in.SysMS, in.MaxRSSKB = 0, 0, 0
	in.Leftovers = nil
	in.PlacedAt, in.StartedAt, in.EndedAt = time.Time{}, time.Time{}, time.Time{}
	in.NotBefore = time.Time{}
	if delay > 0 {
		in.NotBefore = at.Add(delay)
	}
	d.setState(j.ID, in, InstanceQueued, index)
	j.ModifyIndex = index
	d.noteRequeue(j, in, index, at)
}

// neverStarted reports whether no attempt of any of the job's instances
// has started yet.
func (j *Job) neverStarted() bool {
	for i := range j.Instances {
		if in := &j.Instances[i]; !in.StartedAt.IsZero() || len(in.History) > 0 {
			return false
		}
	}
	return true
}

// fenced records a CHILD event that named an attempt no longer current.
func (d *db) fenced(index uint64, at time.Time, res *Result, job uint64, instance int, attempt uint64, machine, what string) {
	if res.Stale && res.Err == nil {
		d.event(index, at, EventInstanceFenced, job, instance, attempt, machine, "stale "+what+" ignored")
	}
}

// termEventKind is the event of an attempt that ended in state.
func termEventKind(state string) string {
	switch state {
	case InstanceFailed:
		return EventInstanceFailed
	case InstanceKilled:
		return EventInstanceKilled
	}
	return EventInstanceEnded
}

// leftoverDetail lists killed leftover processes for an event.
func leftoverDetail(ls []Leftover) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%d (%s)", l.PID, l.Comm)
	}
	return fmt.Sprintf("killed %d leftover process(es): %s", len(ls), strings.Join(parts, ", "))
}

// endDetail says how an attempt ended.
func endDetail(in *Instance) string {
	switch {
	case in.Error != "":
		return in.Error
	case in.Reason != "":
		return in.Reason
	case in.Signal != "":
		return "signal " + in.Signal
	}
	return fmt.Sprintf("exit %d", in.ExitCode)
}
