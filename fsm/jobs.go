package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/queue"
)

// MaxInstances bounds min=N for one job. Apply allocates every instance, so
// an unbounded count in one entry could exhaust every replica at once.
const MaxInstances = 10000

func (d *db) applySubmit(index uint64, c *Submit) *Result {
	if c.IdempotencyKey != "" {
		if id, ok := d.byIdempotency[c.IdempotencyKey]; ok {
			return &Result{Index: index, JobID: id, Existing: true}
		}
	}
	if err := validateSpec(&c.Spec); err != nil {
		return &Result{Index: index, Err: err}
	}
	if err := d.validateDependencies(d.nextJobID, &c.Spec); err != nil {
		return &Result{Index: index, Err: err}
	}
	queueName, err := d.admit(&c.Spec, c.Owner)
	if err != nil {
		return &Result{Index: index, Err: err}
	}
	if q, _ := d.queueLimits(queueName); q.Policy == queue.PolicyGang && c.Spec.Cron == "" {
		c.Spec.Gang = true // every job of a gang queue is a gang
	}
	id := d.nextJobID
	d.nextJobID++
	name := c.Spec.Name
	if name == "" {
		name = DefaultJobName(id)
	}
	n := max(c.Spec.Min, 1)
	if c.Spec.Cron != "" {
		n = 0 // a template: its runs are jobs of their own
	}
	j := &Job{
		ID:             id,
		Name:           name,
		Owner:          c.Owner,
		Queue:          queueName,
		Spec:           c.Spec,
		SubmittedAt:    c.At,
		IdempotencyKey: c.IdempotencyKey,
		Instances:      make([]Instance, n),
		CreateIndex:    index,
		ModifyIndex:    index,
	}
	first := InstanceQueued
	if c.Spec.HasDependencies() {
		first = InstanceHeld
	}
	for i := range j.Instances {
		j.Instances[i] = Instance{Index: i, Attempt: 1, State: first, ModifyIndex: index}
	}
	if c.Spec.Cron != "" {
		j.Cron = &CronState{Through: c.At}
	}
	d.jobs[id] = j
	d.indexJob(j)
	d.event(index, c.At, EventJobSubmitted, id, -1, 0, "", fmt.Sprintf("name=%s owner=%s instances=%d", name, c.Owner, n))
	if first == InstanceHeld {
		d.decide(j, index, c.At) // dependencies that have already ended decide at once
	}
	return &Result{Index: index, JobID: id}
}

// applySubmits creates the jobs of a Submits batch in order, each as
// applySubmit does.
func (d *db) applySubmits(index uint64, c *Submits) *Result {
	out := &Result{Index: index, Events: make([]*Result, len(c.Submits))}
	for i := range c.Submits {
		out.Events[i] = d.applySubmit(index, &c.Submits[i])
	}
	return out
}

// applySubmitPlace creates a job and places what the leader planned for
// it (SubmitPlace).
func (d *db) applySubmitPlace(index uint64, c *SubmitPlace) *Result {
	res := d.applySubmit(index, &c.Submit)
	if res.Err != nil || res.Existing || len(c.Assignments) == 0 {
		return res
	}
	if len(d.queued) > len(d.jobs[res.JobID].Instances) {
		return res // others wait: the scheduler places in queue order
	}
	as := make([]Assignment, len(c.Assignments))
	for i, a := range c.Assignments {
		a.JobID = res.JobID
		as[i] = a
	}
	placed := d.applyPlace(index, &Place{At: c.Submit.At, PlannedAtIndex: c.PlannedAtIndex, Assignments: as})
	res.Accepted, res.Dropped = placed.Accepted, placed.Dropped
	return res
}

func validateSpec(s *JobSpec) error {
	if len(s.Binaries) == 0 {
		return fmt.Errorf("%w: binaries: at least one binary is required", ErrInvalidSpec)
	}
	for _, key := range slices.Sorted(maps.Keys(s.Binaries)) {
		if path := s.Binaries[key]; key == "" || path == "" {
			return fmt.Errorf("%w: binaries: key and path must both be set (got %q=%q)", ErrInvalidSpec, key, path)
		}
	}
	if s.Min < 0 || s.Min > MaxInstances {
		return fmt.Errorf("%w: min: must be between 1 and %d, got %d", ErrInvalidSpec, MaxInstances, s.Min)
	}
	switch s.Restart {
	case "", RestartNo, RestartOnFailure, RestartAlways:
	default:
		return fmt.Errorf("%w: restart: %q is not no, on-failure or always", ErrInvalidSpec, s.Restart)
	}
	if s.MaxRestarts < 0 || s.MaxPerMachine < 0 || s.MemoryMB < 0 || s.Load < 0 {
		return fmt.Errorf("%w: max_restarts, max_per_machine, memory and load must not be negative", ErrInvalidSpec)
	}
	if err := s.checkResources(); err != nil {
		return err
	}
	if err := s.checkCheckpoint(); err != nil {
		return err
	}
	for _, t := range s.MailTypes {
		if !ValidMailType(t) {
			return fmt.Errorf("%w: mail_type: %q is not begin, end, fail, requeue or all", ErrInvalidSpec, t)
		}
	}
	if len(s.MailTypes) > 0 && s.Mail == "" {
		return fmt.Errorf("%w: mail_type without mail", ErrInvalidSpec)
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("%w: env: %q is not NAME=value", ErrInvalidSpec, e)
		}
	}
	if s.TimeLimitSeconds < 0 || s.WarnLeadSeconds < 0 || (s.WarnSignal == "") != (s.WarnLeadSeconds == 0) {
		return fmt.Errorf("%w: time and signal: a limit must not be negative, and a warning needs its signal and its lead", ErrInvalidSpec)
	}
	if s.Priority < MinJobPriority || s.Priority > MaxJobPriority {
		return fmt.Errorf("%w: priority: must be between %d and %d, got %d", ErrInvalidSpec, MinJobPriority, MaxJobPriority, s.Priority)
	}
	if s.Dir != "" && !strings.HasPrefix(s.Dir, "/") {
		return fmt.Errorf("%w: dir: %q is not an absolute path", ErrInvalidSpec, s.Dir)
	}
	return validateCronSpec(s)
}

// applyKill dequeues the job's waiting instances and marks the placed and
// running ones for the leader to signal; they end with their CHILD_TERM.
func (d *db) applyKill(index uint64, c *Kill) *Result {
	j, ok := d.jobs[c.JobID]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("kill job %d: %w", c.JobID, ErrNoSuchJob)}
	}
	d.edit(j)
	if j.Cron != nil {
		return d.killCron(index, j, c)
	}
	res := &Result{Index: index, JobID: j.ID}
	for i := range j.Instances {
		in := &j.Instances[i]
		switch {
		case in.State == InstanceQueued, in.State == InstanceHeld:
			in.EndedAt = c.At
			d.setState(j.ID, in, InstanceKilled, index)
			d.event(index, c.At, EventInstanceKilled, j.ID, in.Index, in.Attempt, "", "dequeued")
			res.Dequeued++
		case in.Active():
			in.KillRequested = true
			in.ModifyIndex = index
			res.Signaled++
		}
	}
	if res.Dequeued == 0 && res.Signaled == 0 {
		return &Result{Index: index, JobID: j.ID, Err: fmt.Errorf("kill job %d: %w", j.ID, ErrJobFinished)}
	}
	j.KillRequested = true
	d.owedSends++ // its active instances are owed the kill signal
	j.KilledBy = c.By
	j.KillSignal = c.Signal
	j.ModifyIndex = index
	d.event(index, c.At, EventJobKilled, j.ID, -1, 0, "", fmt.Sprintf("by=%s signal=%s signaled=%d dequeued=%d", c.By, c.Signal, res.Signaled, res.Dequeued))
	return res
}
