package fsm

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// Machine states. An unreachable machine's lease expired; a down one left
// the gossip pool; a restarting one's stub stopped to start again, its
// jobs running on (StubRestarting).
const (
	MachineUp          = "up"
	MachineDown        = "down"
	MachineUnreachable = "unreachable"
	MachineRestarting  = "restarting"
)

// Instance states. An instance moves queued -> placed -> running -> one of
// the end states; lost when its machine leaves the pool under it. An
// instance of a job with dependencies starts held, and becomes queued or
// cancelled when they decide (dependencies.go).
const (
	InstanceQueued   = "queued"
	InstancePlaced   = "placed"
	InstanceRunning  = "running"
	InstanceExited   = "exited"
	InstanceFailed   = "failed"
	InstanceSignaled = "signaled"
	InstanceKilled   = "killed"
	InstanceLost     = "lost"
	// InstanceSuspended is running but stopped (SIGSTOP); it keeps its slot.
	InstanceSuspended = "suspended"
	// InstancePreempted is an attempt stopped for a preempting job
	// (preempt=requeue): an end state only for the moment its end is
	// applied, since the same entry queues the next attempt, not counted
	// against max_restarts; it stays in the instance's History.
	InstancePreempted = "preempted"
	// InstanceUnknown is a non-restartable instance on a machine whose
	// lease expired: it may still run there and is never killed for that;
	// it becomes lost when the machine is declared down, or takes the
	// result its stub reports when it comes back.
	InstanceUnknown = "unknown"
	// InstanceHeld waits for the job's dependencies (after=, afterok=,
	// afternotok=) to decide; it becomes queued when they allow the job to
	// run, cancelled when they never can.
	InstanceHeld = "held"
	// InstanceCancelled never ran: a dependency of its job ended so that
	// the job can never run. Its Reason names the dependency.
	InstanceCancelled = "cancelled"
)

// Machine is a machine of the pool.
type Machine struct {
	MachineFacts
	State string `json:"state"`
	// Draining is set when the machine's declaration left the database:
	// it takes no new work and its running work is left alone.
	Draining bool `json:"draining,omitempty"`
	// Unhealthy is the problem the machine's stub reports of itself
	// (MachineHealth), "" when it reports none: while set, the machine
	// takes no new work, as while Draining, and its running work is left
	// alone. The two are kept apart so that neither clears the other.
	Unhealthy string `json:"unhealthy,omitempty"`
	// Asleep is why the machine's owner policy put it to sleep
	// (MachineAsleep: "console login", "load 3.2 > 2"), "" while it is
	// awake: while set, the machine takes no new work. Kept apart from
	// Draining and Unhealthy, so that none clears the others.
	Asleep      string    `json:"asleep,omitempty"`
	JoinedAt    time.Time `json:"joined_at"`
	LeftAt      time.Time `json:"left_at,omitzero"`
	LeaveReason string    `json:"leave_reason,omitempty"`
	CreateIndex uint64    `json:"create_index"`
	ModifyIndex uint64    `json:"modify_index"`

	// eff is derived from the facts and the database; never snapshotted.
	eff Effective
	// version changes whenever what a scheduling pass reads of the
	// machine changes (View.MachineVersion); never snapshotted.
	version uint64
}

// Effective returns the attributes the scheduler matches the machine by.
func (m *Machine) Effective() *Effective { return &m.eff }

// Slots is how many instances the machine may run at once: its nprocs
// attribute, which defaults to its CPU count.
func (m *Machine) Slots() int { return max(m.eff.Slots, 1) }

// Accepts reports whether the machine takes new work: it is usable and
// awake.
func (m *Machine) Accepts() bool { return m.Usable() && m.Asleep == "" }

// Usable reports whether the machine could take work but for its owner
// policy: it is up, not drained by the database and not by its own
// stub's health.
func (m *Machine) Usable() bool { return m.State == MachineUp && !m.Draining && m.Unhealthy == "" }

// HasKey reports whether a binary for key runs on the machine: key is the
// wildcard "*" or one of its effective keys (which include its architecture).
func (m *Machine) HasKey(key string) bool {
	_, ok := slices.BinarySearch(m.eff.Keys, key)
	return key == AnyKey || ok
}

// AnyKey is the binaries key that matches every machine.
const AnyKey = "*"

// Instance is one copy of a job and its current attempt.
type Instance struct {
	Index         int       `json:"index"`
	Attempt       uint64    `json:"attempt"`
	State         string    `json:"state"`
	Machine       string    `json:"machine,omitempty"`
	Key           string    `json:"key,omitempty"`
	PID           int       `json:"pid,omitempty"`
	ExitCode      int       `json:"exit_code"`
	Signal        string    `json:"signal,omitempty"`
	Error         string    `json:"error,omitempty"`
	UserMS        int64     `json:"user_ms,omitempty"`
	SysMS         int64     `json:"sys_ms,omitempty"`
	MaxRSSKB      int64     `json:"max_rss_kb,omitempty"`
	PlacedAt      time.Time `json:"placed_at,omitzero"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	EndedAt       time.Time `json:"ended_at,omitzero"`
	KillRequested bool      `json:"kill_requested,omitempty"`
	// NotBefore delays a restarted attempt (restart backoff).
	NotBefore time.Time `json:"not_before,omitzero"`
	// RestartRequested is set by `netmgr restart` on an active attempt: it
	// is signalled, and its end queues a new attempt at once.
	RestartRequested bool `json:"restart_requested,omitempty"`
	// Reason says why the stub ended the attempt (a queue limit).
	Reason string `json:"reason,omitempty"`
	// SuspendIndex and ResumeIndex are the indexes of the last Suspend and
	// Resume of the attempt: the leader owes SIGSTOP while it is suspended
	// and SIGCONT once ResumeIndex is the later.
	SuspendIndex uint64 `json:"suspend_index,omitempty"`
	ResumeIndex  uint64 `json:"resume_index,omitempty"`
	// Restarts counts attempts started again under the restart policy;
	// History keeps how each earlier attempt ended.
	Restarts int          `json:"restarts,omitempty"`
	History  []AttemptEnd `json:"history,omitempty"`
	// Leftovers are the processes the current attempt left behind when it
	// ended, which its supervisor killed.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// StaleEvents counts CHILD events that arrived for an attempt that was
	// no longer current (fenced).
	StaleEvents int    `json:"stale_events,omitempty"`
	ModifyIndex uint64 `json:"modify_index"`
	// GPUs are the indices of the GPUs of its machine the attempt holds,
	// chosen by Apply when it was placed (the lowest free of the job's
	// type); since snapshot version 14.
	GPUs []int `json:"gpus,omitempty"`
	// PreemptedBy is the preempting job this attempt was stopped for
	// (Preempt), and Preempt how: PreemptRequeue while it is being
	// stopped, PreemptSuspend while it is suspended for it (lent). Both
	// are cleared by a resume and by the next attempt; since snapshot
	// version 15.
	PreemptedBy uint64 `json:"preempted_by,omitempty"`
	Preempt     string `json:"preempt,omitempty"`
	// Checkpoint is the newest checkpoint an attempt of the instance
	// kept (CheckpointKept), restored into every later attempt's exec
	// dir; nil while none is. Since snapshot version 15.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Finished reports whether the instance has ended for good.
func (i *Instance) Finished() bool {
	switch i.State {
	case InstanceExited, InstanceFailed, InstanceSignaled, InstanceKilled, InstanceLost, InstanceCancelled, InstancePreempted:
		return true
	}
	return false
}

// Active reports whether the instance holds a slot on its machine.
func (i *Instance) Active() bool {
	switch i.State {
	case InstancePlaced, InstanceRunning, InstanceSuspended, InstanceUnknown:
		return true
	}
	return false
}

// Job is a submitted job and its instances.
type Job struct {
	ID             uint64     `json:"id"`
	Name           string     `json:"name"`
	Owner          string     `json:"owner"`
	Queue          string     `json:"queue,omitempty"`
	Spec           JobSpec    `json:"spec"`
	SubmittedAt    time.Time  `json:"submitted_at"`
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	KillRequested  bool       `json:"kill_requested,omitempty"`
	KilledBy       string     `json:"killed_by,omitempty"`
	KillSignal     string     `json:"kill_signal,omitempty"`
	Instances      []Instance `json:"instances"`
	CreateIndex    uint64     `json:"create_index"`
	ModifyIndex    uint64     `json:"modify_index"`
	// Cron is set on a cron job (Spec.Cron): its schedule's record. A
	// cron job has no instances.
	Cron *CronState `json:"cron,omitempty"`
	// CronJob is, on a run of a cron job, that job's id, and Scheduled
	// the time the run was scheduled for.
	CronJob   uint64    `json:"cron_job,omitempty"`
	Scheduled time.Time `json:"scheduled,omitzero"`
	// Outputs are the kept copy_out files of its instances, one per
	// instance at most (its latest attempt's), in the order they came.
	Outputs []Output `json:"outputs,omitempty"`

	// done is derived: every instance has finished.
	done bool
	// binaryKeys is derived: Spec.Binaries' keys, sorted (BinaryKeys).
	binaryKeys []string
}

// BinaryKeys returns the keys of the job's binaries, sorted: what the
// matcher prefers them by. The slice may be the job's own: do not change
// it. A job in the database keeps it, so that the leader's pass, which
// asks for every waiting job's after every commit, reads no map; one not
// yet submitted (a submit's plan) has them sorted afresh.
func (j *Job) BinaryKeys() []string {
	if j.binaryKeys == nil && len(j.Spec.Binaries) > 0 {
		return slices.Sorted(maps.Keys(j.Spec.Binaries))
	}
	return j.binaryKeys
}

// allFinished reports whether every instance has ended for good.
func (j *Job) allFinished() bool {
	for i := range j.Instances {
		if !j.Instances[i].Finished() {
			return false
		}
	}
	return true
}

// Job states, derived from the instances.
const (
	JobQueued  = "queued"
	JobRunning = "running"
	JobDone    = "done"
	JobFailed  = "failed"
	JobKilled  = "killed"
	// JobHeld waits for its dependencies; JobCancelled ended because one
	// of them ended so that it can never run.
	JobHeld      = "held"
	JobCancelled = "cancelled"
)

// State derives the job's state from its instances: running while any is
// placed or running, queued while any waits, held while its dependencies
// have not decided, then killed, cancelled, failed or done. A cron job
// is scheduled until netkill ends its schedule, then killed.
func (j *Job) State() string {
	if j.Cron != nil {
		if j.Cron.Ended {
			return JobKilled
		}
		return JobScheduled
	}
	var queued, active, failed, killed, held, cancelled bool
	for i := range j.Instances {
		switch j.Instances[i].State {
		case InstanceQueued:
			queued = true
		case InstanceHeld:
			held = true
		case InstanceCancelled:
			cancelled = true
		case InstancePlaced, InstanceRunning, InstanceSuspended, InstanceUnknown:
			active = true
		case InstanceKilled, InstancePreempted:
			killed = true
		case InstanceFailed, InstanceSignaled, InstanceLost:
			failed = true
		}
	}
	switch {
	case active:
		return JobRunning
	case queued:
		return JobQueued
	case held:
		return JobHeld
	case failed && j.Spec.Gang && !j.KillRequested:
		return JobFailed // the gang's others were stopped for this failure
	case killed:
		return JobKilled
	case cancelled:
		return JobCancelled
	case failed:
		return JobFailed
	}
	return JobDone
}

// DefaultJobName is the name a job without symb_name gets.
func DefaultJobName(id uint64) string { return "job" + strconv.FormatUint(id, 10) }

// InstanceRef names one instance.
type InstanceRef struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
}

// compareRefs orders refs by job then instance.
func compareRefs(a, b InstanceRef) int {
	if a.JobID != b.JobID {
		if a.JobID < b.JobID {
			return -1
		}
		return 1
	}
	return a.Instance - b.Instance
}

// AttemptEnd records how an earlier attempt of an instance ended.
type AttemptEnd struct {
	Attempt   uint64    `json:"attempt"`
	Machine   string    `json:"machine"`
	Key       string    `json:"key,omitempty"`
	State     string    `json:"state"`
	ExitCode  int       `json:"exit_code"`
	Signal    string    `json:"signal,omitempty"`
	Error     string    `json:"error,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	UserMS    int64     `json:"user_ms,omitempty"`
	SysMS     int64     `json:"sys_ms,omitempty"`
	MaxRSSKB  int64     `json:"max_rss_kb,omitempty"`
	PlacedAt  time.Time `json:"placed_at,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Reservation sets machines aside for one user during a window.
type Reservation struct {
	ID          uint64    `json:"id"`
	Owner       string    `json:"owner"`
	Machines    []string  `json:"machines"`
	From        time.Time `json:"from"`
	Until       time.Time `json:"until,omitzero"` // zero: until unreserved
	CreateIndex uint64    `json:"create_index"`
}

// InForce reports whether the reservation holds at t.
func (r *Reservation) InForce(t time.Time) bool {
	return !t.Before(r.From) && (r.Until.IsZero() || t.Before(r.Until))
}

// overlaps reports whether two windows share any instant.
func (r *Reservation) overlaps(from, until time.Time) bool {
	endsBefore := func(end, start time.Time) bool { return !end.IsZero() && !end.After(start) }
	return !endsBefore(r.Until, from) && !endsBefore(until, r.From)
}
