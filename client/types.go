package client

import (
	"strings"
	"time"
)

// AnyKey is the binaries key that matches every machine. `netexec BINARY`
// submits its binary under this key.
const AnyKey = "*"

// JobSpec is what a user asks to run: the paper's job specification.
type JobSpec struct {
	// Name is the symbolic job name (symb_name); the server assigns
	// "job<ID>" when it is empty.
	Name string `json:"name,omitempty"`
	// Binaries maps a machine key (an architecture such as x86_64, or
	// AnyKey) to the path of the binary to run on machines with that key.
	Binaries map[string]string `json:"binaries"`
	// Args are passed to the binary after its name.
	Args []string `json:"args,omitempty"`
	// Env holds "NAME=value" entries for the job's environment.
	Env []string `json:"env,omitempty"`
	// Min is the number of instances to run (min=N); zero means one.
	Min int `json:"min,omitempty"`

	// Requirements a machine must meet (the matcher's filters).

	// Keys the machine must all have (keys={mathlab,fpu}).
	Keys []string `json:"keys,omitempty"`
	// Requirements are comparisons on numeric machine attributes
	// (mem>10, rating>=8).
	Requirements []Requirement `json:"requirements,omitempty"`
	// Mounts the machine must have mounted (mounts={/usr/u/fred/data}).
	Mounts []string `json:"mounts,omitempty"`
	// Machines, when set, restricts the job to these machines.
	Machines []string `json:"machines,omitempty"`
	// Unique asks for at most one instance per machine.
	Unique bool `json:"unique,omitempty"`
	// MaxPerMachine bounds the job's instances on one machine; 0 = no bound.
	MaxPerMachine int `json:"max_per_machine,omitempty"`
	// Gang makes the job a gang (gang, netexec --gang): all its instances
	// are placed at once or none, they stop and restart together, and
	// each learns the gang's machines (NETMGR_GANG_HOSTS, a host file).
	Gang bool `json:"gang,omitempty"`
	// Load is the load one instance imposes on its machine (load=F); 0
	// means the default of 1.0, one busy CPU.
	Load float64 `json:"load,omitempty"`
	// MemoryMB is the memory one instance needs (memory=N), in MB. It is
	// also the instance's memory limit: the supervisor kills an instance
	// whose resident memory grows past it (reason "memory: ...").
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// CPUs is how many of a machine's CPUs one instance takes (cpus=N,
	// netexec --cpus); 0 means 1, one slot as before. It is enforced with
	// the cgroup's cpu.max, or a cpuset with ExclusiveCPUs.
	CPUs int `json:"cpus,omitempty"`
	// ExclusiveCPUs gives each instance CPUs of its own (a cpuset) rather
	// than a share of the machine's time (netexec --exclusive-cpus).
	ExclusiveCPUs bool `json:"exclusive_cpus,omitempty"`
	// GPUs is how many GPUs one instance needs (gpus=N or gpus=TYPE:N,
	// netexec --gpus), of GPUType when set. The instance sees exactly
	// those given it (CUDA_VISIBLE_DEVICES, NETMGR_GPUS).
	GPUs    int    `json:"gpus,omitempty"`
	GPUType string `json:"gpu_type,omitempty"`
	// Gres are the generic resources one instance needs, by name
	// (gres=NAME:N, netexec --gres), declared per machine (gres={fpga=2}).
	Gres map[string]int `json:"gres,omitempty"`
	// DiskMB is the local disk under its exec dir one instance claims
	// (disk=SIZE, netexec --disk); an instance that writes more is killed
	// with reason "disk: ...".
	DiskMB int64 `json:"disk_mb,omitempty"`
	// Licenses are the pool-wide licences one instance holds from start
	// to end (license=NAME:N, netexec --license), declared in the
	// database (license matlab = 10).
	Licenses map[string]int `json:"licenses,omitempty"`
	// Checkpoint are the files and directories (relative to the exec
	// dir) kept when an attempt exits with CheckpointExit (checkpoint=,
	// checkpoint_exit=, netexec --checkpoint, --checkpoint-exit): a
	// majority of the servers keep them, the instance starts again at
	// once, and every later attempt starts with the newest kept
	// checkpoint in its exec dir. A job that checkpoints is restartable.
	Checkpoint     []string `json:"checkpoint,omitempty"`
	CheckpointExit int      `json:"checkpoint_exit,omitempty"`
	// Priority is the job's priority within its queue (higher first,
	// before fair share and submit order), -1000 to 1000. Only the site
	// policy's admit sets it: a submit that names one is refused.
	Priority int `json:"priority,omitempty"`
	// TimeLimitS is the instance's time limit (time=, netexec --time), in
	// seconds; 0 means the queue's run limit only. It must not exceed the
	// queue's. An attempt that runs past it gets SIGTERM, then SIGKILL
	// after the queue's kill grace, and ends with reason "timeout: ...".
	TimeLimitS int64 `json:"time_limit_s,omitempty"`
	// WarnSignal and WarnLeadS are the warning of signal=SIG@LEAD (netexec
	// --signal, Slurm's form): the signal's name without SIG ("USR1"),
	// sent WarnLeadS seconds before the time limit so that the job can
	// checkpoint. WarnSignal is "" for no warning.
	WarnSignal string `json:"warn_signal,omitempty"`
	WarnLeadS  int64  `json:"warn_lead_s,omitempty"`
	// Queue names the batch queue the job waits in; "" is the default queue.
	Queue string `json:"queue,omitempty"`
	// Restart is the restart policy: "" or "no", "on-failure", "always".
	Restart string `json:"restart,omitempty"`
	// MaxRestarts bounds restarts per instance under a restart policy;
	// 0 means the server's default.
	MaxRestarts int `json:"max_restarts,omitempty"`

	// Mail is who the job's mail goes to (mail=ADDRESS), or "owner" for
	// the bare option; "" for no mail. MailType are the events mailed
	// (mail_type: begin, end, fail, requeue, all); none means end and
	// fail.
	Mail     string   `json:"mail,omitempty"`
	MailType []string `json:"mail_type,omitempty"`

	// Cron makes the job a cron job (cron="0 3 * * *"): five fields
	// (minute, hour, day of month, month, day of week), or six with
	// seconds first, or a name (@hourly, @daily, @every 2s), with an
	// optional time zone prefix (CRON_TZ=Europe/Paris). The job itself
	// runs nothing; each firing makes a run job of its own. Catchup
	// (CatchupLast, the default, or CatchupNone) says what a firing
	// missed while no server led the group does; Overlap (OverlapSkip,
	// the default, or OverlapAllow) what a firing does while the
	// previous run still runs.
	Cron    string `json:"cron,omitempty"`
	Catchup string `json:"catchup,omitempty"`
	Overlap string `json:"overlap,omitempty"`

	// CopyIn are the files and directories sent with the job
	// (copy_in=): in a submit request, their names in the exec dir, the
	// archive of them already uploaded (PutBlob) and named by CopyInBlob,
	// its sha256, and CopyInSize, its size. CopyOut are the paths (globs
	// allowed) taken from the exec dir when an attempt ends (copy_out=);
	// the servers keep them (Job.Outputs).
	CopyIn     []string `json:"copy_in,omitempty"`
	CopyInBlob string   `json:"copy_in_blob,omitempty"`
	CopyInSize int64    `json:"copy_in_size,omitempty"`
	CopyOut    []string `json:"copy_out,omitempty"`

	// After, AfterOK and AfterNotOK name (by id or symb_name) the jobs
	// this one waits for: it starts once each After job has ended however
	// it ended, each AfterOK job has succeeded and each AfterNotOK job
	// has not. The server resolves names at submit; in answers they are
	// the ids.
	After      []string `json:"after,omitempty"`
	AfterOK    []string `json:"afterok,omitempty"`
	AfterNotOK []string `json:"afternotok,omitempty"`

	// Dir is the working directory the job's processes start in
	// (netexec --chdir), an absolute path on the machine; empty means
	// the attempt's exec dir.
	Dir string `json:"dir,omitempty"`
}

// IsAutomaticName reports whether name has the form job<NUMBER> the
// server gives a job submitted without a name. Such a name is refused as
// a job's symb_name: it could be another job's automatic name.
func IsAutomaticName(name string) bool {
	digits, ok := strings.CutPrefix(name, "job")
	if !ok || digits == "" {
		return false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Requirement is one comparison on a numeric machine attribute.
type Requirement struct {
	Attr  string  `json:"attr"`
	Op    string  `json:"op"` // one of > >= < <= == !=
	Value float64 `json:"value"`
}

// Restart policies.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Cron policies.
const (
	CatchupLast  = "last"  // run once for the most recent missed time
	CatchupNone  = "none"  // run none of the missed times
	OverlapSkip  = "skip"  // skip a firing while the previous run runs
	OverlapAllow = "allow" // run it alongside
)

// ScheduledTimeEnv is the variable a cron job's run finds its scheduled
// time in, as RFC 3339.
const ScheduledTimeEnv = "NETMGR_SCHEDULED_TIME"

// CronStatus is how a cron job's schedule stands.
type CronStatus struct {
	// Schedule is the cron expression; Next the next firing (zero once
	// the schedule has ended or has no more times).
	Schedule string    `json:"schedule"`
	Catchup  string    `json:"catchup"`
	Overlap  string    `json:"overlap"`
	Next     time.Time `json:"next,omitzero"`
	// Through is the latest scheduled time decided (run or skipped).
	Through time.Time `json:"through"`
	// Runs are the run jobs' ids, in firing order.
	Runs []uint64 `json:"runs,omitempty"`
	// Skips are the latest firings that made no run, and why; Skipped
	// counts all of them.
	Skips   []CronSkip `json:"skips,omitempty"`
	Skipped int        `json:"skipped,omitempty"`
	// Ended is set once netkill ended the schedule.
	Ended   bool      `json:"ended,omitempty"`
	EndedBy string    `json:"ended_by,omitempty"`
	EndedAt time.Time `json:"ended_at,omitzero"`
}

// CronSkip is one scheduled time that made no run.
type CronSkip struct {
	Scheduled time.Time `json:"scheduled"`
	Reason    string    `json:"reason"`
}

// SubmitRequest is the body of POST /v1/jobs.
type SubmitRequest struct {
	Spec JobSpec `json:"spec"`
	// IdempotencyKey makes a retried submit return the job the first try
	// created instead of creating a second one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// NoQueue refuses the job, creating nothing, when no machine of the
	// pool meets its requirements (netexec --no-queue); without it such
	// a job is queued and the answer's Unrunnable says why it waits.
	NoQueue bool `json:"no_queue,omitempty"`
}

// CheckResponse answers POST /v1/jobs/check: the spec as the spec
// language writes it, and either why the servers would refuse it (Error)
// or, when they would take it, why no machine could run it now
// (Unrunnable; empty when one can).
type CheckResponse struct {
	Spec       string `json:"spec"`
	Error      string `json:"error,omitempty"`
	Unrunnable string `json:"unrunnable,omitempty"`
}

// SubmitResponse answers a submit.
type SubmitResponse struct {
	ID    uint64 `json:"id"`
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Unrunnable, when set, says why no machine of the pool can run the
	// job as the pool stands at submit, in the words of netstatus --why
	// ("3 machines lack key sparc"); the job is queued all the same, for
	// a machine that may join.
	Unrunnable string `json:"unrunnable,omitempty"`
}

// Job states as the API reports them.
const (
	JobQueued  = "queued"
	JobRunning = "running"
	JobDone    = "done"
	JobFailed  = "failed"
	JobKilled  = "killed"
	// JobHeld waits for its dependencies (after=, afterok=, afternotok=);
	// JobCancelled never ran because one of them ended so that it never
	// can.
	JobHeld      = "held(dependency)"
	JobCancelled = "cancelled(dependency)"
	// JobScheduled is a cron job whose schedule runs; netkill ends it
	// (JobKilled).
	JobScheduled = "scheduled"
)

// Instance states as the API reports them.
const (
	InstanceQueued   = "queued"
	InstancePlaced   = "placed"
	InstanceRunning  = "running"
	InstanceExited   = "exited"   // exit code 0
	InstanceFailed   = "failed"   // non-zero exit or exec error
	InstanceSignaled = "signaled" // ended by a signal it was not asked to take
	InstanceKilled   = "killed"   // ended after netkill
	InstanceLost     = "lost"     // its machine left the pool while it ran
	// InstanceUnknown is a non-restartable instance whose machine's lease
	// expired: it may still be running there; it is never killed for that.
	InstanceUnknown = "unknown"
	// InstanceSuspended is running but stopped (SIGSTOP); it keeps its slot.
	InstanceSuspended = "suspended"
	// InstanceHeld waits for its job's dependencies.
	InstanceHeld = "held"
	// InstanceCancelled never ran: a dependency ended so that its job never
	// can (its Reason says which).
	InstanceCancelled = "cancelled"
)

// Job is one job with its instances, as GET /v1/jobs returns it.
type Job struct {
	ID          uint64     `json:"id"`
	Name        string     `json:"name"`
	Owner       string     `json:"owner"`
	State       string     `json:"state"`
	Spec        JobSpec    `json:"spec"`
	SubmittedAt time.Time  `json:"submitted_at"`
	Instances   []Instance `json:"instances"`
	// Index is the Raft index that last changed the job.
	Index uint64 `json:"index"`
	// Dependencies are the jobs it waits or waited for, with their state
	// now; empty when it names none.
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// Cron is set on a cron job: its schedule and runs.
	Cron *CronStatus `json:"cron,omitempty"`
	// CronJob is, on a run of a cron job, that job's id; Scheduled is the
	// time it was scheduled for.
	CronJob   uint64    `json:"cron_job,omitempty"`
	Scheduled time.Time `json:"scheduled,omitzero"`
	// Outputs are the kept copy_out files of its instances (the latest
	// attempt's of each), which `netmgr fetch` writes out.
	Outputs []Output `json:"outputs,omitempty"`
}

// Dependency is one job another waits for, and how that job stands.
type Dependency struct {
	Kind  string `json:"kind"` // after, afterok or afternotok
	JobID uint64 `json:"job_id"`
	Name  string `json:"name,omitempty"`
	State string `json:"state,omitempty"`
	// Verdict is waiting, satisfied or never.
	Verdict string `json:"verdict"`
}

// Dependency verdicts.
const (
	DepWaiting   = "waiting"
	DepSatisfied = "satisfied"
	DepNever     = "never"
)

// Instance is one copy of a job and its current attempt.
type Instance struct {
	Index   int    `json:"index"`
	Attempt uint64 `json:"attempt"`
	State   string `json:"state"`
	Machine string `json:"machine,omitempty"`
	// GPUs are the indices of the GPUs of Machine the attempt holds.
	GPUs []int `json:"gpus,omitempty"`
	// Checkpoint is the newest checkpoint an attempt of the instance
	// kept, which every later attempt starts from; nil while none is.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Binary is the path chosen for Machine's key, once placed.
	Binary    string    `json:"binary,omitempty"`
	PID       int       `json:"pid,omitempty"`
	ExitCode  int       `json:"exit_code"`
	Signal    string    `json:"signal,omitempty"`
	Error     string    `json:"error,omitempty"`
	PlacedAt  time.Time `json:"placed_at,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	UserMS    int64     `json:"user_ms,omitempty"`
	SysMS     int64     `json:"sys_ms,omitempty"`
	MaxRSSKB  int64     `json:"max_rss_kb,omitempty"`
	// KillRequested is set once netkill asked for the instance to end.
	KillRequested bool `json:"kill_requested,omitempty"`
	// Restarts counts attempts started again by the restart policy;
	// NotBefore is when a restarted attempt may be placed.
	Restarts  int       `json:"restarts,omitempty"`
	NotBefore time.Time `json:"not_before,omitzero"`
	// Reason says why an instance ended when it was not its own doing:
	// "killed by netkill", "timeout: run limit of 3h20m0s exceeded",
	// "memory: memory limit of 20 MB exceeded". A limit's reason starts
	// with its name, timeout or memory; older stubs wrote "run limit of
	// ..." and "memory limit of ...".
	Reason string `json:"reason,omitempty"`
	// Leftovers are processes the attempt left behind when it ended; its
	// supervisor killed them.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// Queue is the job's queue.
	Queue string `json:"queue,omitempty"`
	// History is how each earlier attempt ended, oldest first; set only
	// by GET /v1/jobs/{ref} (netstatus JOB), not in the list of jobs.
	History []AttemptEnd `json:"history,omitempty"`
}

// AttemptEnd is how an earlier attempt of an instance ended: where it ran,
// when, and its exit, signal, error or reason, as Instance has them for
// the current attempt.
type AttemptEnd struct {
	Attempt   uint64    `json:"attempt"`
	Machine   string    `json:"machine,omitempty"`
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

// DefaultQueue is the queue of a job that names none. It always exists,
// has priority 0 and no limits unless an administrator sets some.
const DefaultQueue = "default"

// Queue is a batch queue with its limits (0 = no limit) and, in answers,
// what it holds now.
type Queue struct {
	Name          string `json:"name"`
	Priority      int    `json:"priority"`
	MaxSize       int64  `json:"max_size"`        // jobs it may hold (not finished)
	MaxActive     int64  `json:"max_active"`      // instances running at once
	MaxRunSeconds int64  `json:"max_run_seconds"` // per instance, then TERM and KILL
	MaxMemMB      int64  `json:"max_mem_mb"`      // per instance
	Jobs          int    `json:"jobs"`            // unfinished jobs
	Waiting       int    `json:"waiting"`         // queued instances
	Running       int    `json:"running"`         // placed, running or suspended instances
	// Policy is the queue's placement policy (add_q policy=): "" for the
	// default, backfill, or gang, dedicated, spread. Only the database
	// file sets it; netmgr admin queue keeps it.
	Policy string `json:"policy,omitempty"`
	// Preempt is add_q preempt=: "requeue" or "suspend" when the queue's
	// waiting jobs take slots from lower-priority queues, "" otherwise.
	Preempt string `json:"preempt,omitempty"`
	// MaxUserActive and MaxUserQueued are nq_maxuser_active and
	// nq_maxuser_queued: one user's instances running at once and
	// unfinished jobs in the queue; 0 for no limit. Only the database
	// file sets them; netmgr admin queue keeps them.
	MaxUserActive int64 `json:"max_user_active,omitempty"`
	MaxUserQueued int64 `json:"max_user_queued,omitempty"`
	// Interactive marks the queue of interactive work (add_q
	// interactive=yes): netexec -i and --pty jobs naming no queue go
	// there, and its waiting work starts before every other queue's.
	Interactive bool `json:"interactive,omitempty"`
	// Prime is the queue's prime time (add_q prime={...}); nil when it
	// has none. The priority and limits above are those in force: the
	// queue's own, or its prime-time values while the window is open.
	Prime *QueuePrime `json:"prime,omitempty"`
}

// QueuePrime is a queue's prime-time window: when it is open, the values
// in force inside and outside it, and the next change.
type QueuePrime struct {
	// Windows are the windows as declared ("Mon-Fri 08:00-18:00"), read
	// in the IANA time zone TZ.
	Windows []string `json:"windows"`
	TZ      string   `json:"tz"`
	// Open says whether the prime-time values are in force; Since is the
	// scheduled instant of the switch that made it so, zero before the
	// first.
	Open  bool      `json:"open"`
	Since time.Time `json:"since,omitzero"`
	// Next is when the window next opens (NextOpen) or closes, by the
	// answering server's clock; zero when it never changes.
	Next     time.Time `json:"next_change,omitzero"`
	NextOpen bool      `json:"next_open"`
	// Outside and Inside are the values in force outside and inside the
	// window.
	Outside QueueValues `json:"outside"`
	Inside  QueueValues `json:"inside"`
}

// QueueValues are a queue's priority and limits; 0 means no limit.
type QueueValues struct {
	Priority      int   `json:"priority"`
	MaxSize       int64 `json:"max_size"`
	MaxActive     int64 `json:"max_active"`
	MaxRunSeconds int64 `json:"max_run_seconds"`
	MaxMemMB      int64 `json:"max_mem_mb"`
	MaxUserActive int64 `json:"max_user_active"`
	MaxUserQueued int64 `json:"max_user_queued"`
}

// ReserveRequest asks to set machines aside for the requesting user: the
// named Machines, or N machines meeting Require (a job-spec string of
// requirements such as "keys={mathlab},mem>10"). The window starts at From
// (now when zero) and lasts For (until unreserve when zero).
type ReserveRequest struct {
	Machines []string      `json:"machines,omitempty"`
	N        int           `json:"n,omitempty"`
	Require  *JobSpec      `json:"require,omitempty"`
	From     time.Time     `json:"from,omitzero"`
	For      time.Duration `json:"for,omitempty"`
}

// Reservation is machines set aside for one user during a window.
type Reservation struct {
	ID       uint64    `json:"id"`
	Owner    string    `json:"owner"`
	Machines []string  `json:"machines"`
	From     time.Time `json:"from"`
	Until    time.Time `json:"until,omitzero"` // zero: until unreserved
}

// UnreserveRequest ends reservations: by ID, or every reservation of the
// requesting user that holds one of Machines (all of the user's when both
// are empty).
type UnreserveRequest struct {
	ID       uint64   `json:"id,omitempty"`
	Machines []string `json:"machines,omitempty"`
}

// UnreserveResponse lists the reservations ended.
type UnreserveResponse struct {
	Ended []Reservation `json:"ended"`
}

// ControlResponse answers suspend, resume and restart of a job.
type ControlResponse struct {
	ID uint64 `json:"id"`
	// Affected counts the instances the action applies to.
	Affected int `json:"affected"`
}

// Finished reports whether the instance has ended for good.
func (i Instance) Finished() bool {
	switch i.State {
	case InstanceExited, InstanceFailed, InstanceSignaled, InstanceKilled, InstanceLost, InstanceCancelled:
		return true
	}
	return false
}

// KillRequest is the body of POST /v1/jobs/{ref}/kill.
type KillRequest struct {
	// Signal is the first signal sent ("TERM" when empty); SIGKILL follows
	// after the stub's grace period if the group is still alive.
	Signal string `json:"signal,omitempty"`
	// Runs, for a cron job, kills its running and queued runs too; without
	// it a kill of a cron job only ends its schedule.
	Runs bool `json:"runs,omitempty"`
}

// KillResponse answers a kill.
type KillResponse struct {
	ID uint64 `json:"id"`
	// Signaled counts the instances that were placed or running and will
	// be signalled; Dequeued counts queued instances that will never run.
	Signaled int `json:"signaled"`
	Dequeued int `json:"dequeued"`
}

// ErrorResponse is the body of every non-2xx answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Event is one committed state change, as GET /v1/events lists it: a
// leader elected, a machine joined, left, unreachable or back, an instance
// placed, started, ended, lost, restarted, fenced, failed or killed, a job
// submitted or killed, a database loaded. Index is the Raft index of the
// command that caused it; At is that command's time. Instance is -1 when
// the event names no instance.
type Event struct {
	Index    uint64    `json:"index"`
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"`
	Job      uint64    `json:"job,omitempty"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt,omitempty"`
	Machine  string    `json:"machine,omitempty"`
	Detail   string    `json:"detail,omitempty"`
}

// HistoryAttempt is how one attempt of one instance ended, as GET
// /v1/history lists it: the accounting record every server keeps after
// the job has left the database. Index is the Raft index of the entry
// that ended it; ReplacedBy the attempt that took its place (0: none).
// UserMS and SysMS are CPU time, MaxRSSKB the peak resident memory.
type HistoryAttempt struct {
	Index       uint64    `json:"index"`
	Job         uint64    `json:"job"`
	Name        string    `json:"name,omitempty"`
	Owner       string    `json:"owner"`
	Queue       string    `json:"queue,omitempty"`
	Instance    int       `json:"instance"`
	Attempt     uint64    `json:"attempt"`
	Machine     string    `json:"machine,omitempty"`
	State       string    `json:"state"`
	ExitCode    int       `json:"exit_code"`
	Signal      string    `json:"signal,omitempty"`
	Error       string    `json:"error,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	UserMS      int64     `json:"user_ms,omitempty"`
	SysMS       int64     `json:"sys_ms,omitempty"`
	MaxRSSKB    int64     `json:"max_rss_kb,omitempty"`
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	PlacedAt    time.Time `json:"placed_at,omitzero"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	ReplacedBy  uint64    `json:"replaced_by,omitempty"`
	// CheckpointSize and CheckpointAt describe the checkpoint the attempt
	// kept (its size in bytes, when it was committed); zero for none.
	CheckpointSize int64     `json:"checkpoint_size,omitempty"`
	CheckpointAt   time.Time `json:"checkpoint_at,omitzero"`
}

// HistoryQuery selects attempts for GET /v1/history; empty fields select
// all. Since and Until bound the end time.
type HistoryQuery struct {
	User    string
	State   string
	Queue   string
	Machine string
	Job     uint64 // one job's attempts; 0: every job's
	Since   time.Time
	Until   time.Time
}

// HistoryRange is a server's answer to another's GET /v1/history/range:
// the records of the entries after the asked index through UpTo.
type HistoryRange struct {
	UpTo    uint64              `json:"up_to"`
	Entries []HistoryRangeEntry `json:"entries"`
}

// HistoryRangeEntry is what one entry produced, for HistoryRange.
type HistoryRangeEntry struct {
	Index    uint64           `json:"index"`
	Events   []Event          `json:"events,omitempty"`
	Attempts []HistoryAttempt `json:"attempts,omitempty"`
}
