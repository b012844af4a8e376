package client

import (
	"fmt"
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
	// Load is the load one instance imposes on its machine (load=F); 0
	// means the default of 1.0, one busy CPU.
	Load float64 `json:"load,omitempty"`
	// MemoryMB is the memory one instance needs (memory=N), in MB.
	MemoryMB int64 `json:"memory_mb,omitempty"`
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

	// Options whose machinery comes later; a server that cannot honour
	// one refuses the job rather than ignore it.
	CopyIn  []string `json:"copy_in,omitempty"`
	CopyOut []string `json:"copy_out,omitempty"`

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
	// "killed by netkill", "run limit of 200m exceeded", "memory limit of
	// 20 MB exceeded".
	Reason string `json:"reason,omitempty"`
	// Leftovers are processes the attempt left behind when it ended; its
	// supervisor killed them.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// Queue is the job's queue.
	Queue string `json:"queue,omitempty"`
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

// Machine states.
const (
	MachineUp          = "up"
	MachineDown        = "down"
	MachineDraining    = "draining"    // up, but takes no new work
	MachineSuspect     = "suspect"     // gossip suspects it: no new work
	MachineUnreachable = "unreachable" // its lease expired: its restartable work runs elsewhere
	MachineAsleep      = "asleep"      // its owner policy put it to sleep: no new work
)

// Machine is one machine of the pool, as GET /v1/machines returns it,
// with the attributes the scheduler matches against (database declaration,
// init file and detected facts merged).
type Machine struct {
	Name     string  `json:"name"`
	Arch     string  `json:"arch"`
	MType    string  `json:"mtype,omitempty"`
	CPUs     int     `json:"cpus"`
	Slots    int     `json:"slots"`
	MemoryMB int64   `json:"memory_mb"`
	Rating   float64 `json:"rating"`
	Load     float64 `json:"load"`
	// ExecUsedBytes is the space the files in the stub's exec dir take
	// (running attempts' directories and ended ones kept for the exec
	// retention), as its stub last gossiped it; 0 when it has not (it
	// does from 1 MiB on).
	ExecUsedBytes int64              `json:"exec_used_bytes,omitempty"`
	Running       int                `json:"running"`
	State         string             `json:"state"`
	Keys          []string           `json:"keys,omitempty"`
	Attrs         map[string]float64 `json:"attrs,omitempty"`
	Mounts        []string           `json:"mounts,omitempty"`
	Addr          string             `json:"addr"`
	// Declared is true when the database has a machine declaration for it.
	Declared bool `json:"declared,omitempty"`
	// ReservedBy and ReservedUntil show a reservation in force now.
	ReservedBy    string    `json:"reserved_by,omitempty"`
	ReservedUntil time.Time `json:"reserved_until,omitzero"`
	// Problem is why the machine's stub drains it ("exec dir full: 0 B
	// free"); State is then draining. Empty when the stub reports none.
	Problem string `json:"problem,omitempty"`
	// Asleep is why the machine's owner policy put it to sleep ("console
	// login", "load 3.2 > 2", "outside window"); State is then asleep
	// unless it drains too. Empty while it is awake.
	Asleep string `json:"asleep,omitempty"`
}

// DatabaseText is the body of POST /v1/admin/database and the answer of
// GET /v1/admin/database: a database in the declaration language.
type DatabaseText struct {
	// Filename names the text in error messages (file:line:col).
	Filename string `json:"filename,omitempty"`
	Text     string `json:"text"`
}

// LoadResponse answers a database load.
type LoadResponse struct {
	Index    uint64 `json:"index"`
	Keys     int    `json:"keys"`
	MTypes   int    `json:"mtypes"`
	Machines int    `json:"machines"`
	Queues   int    `json:"queues"`
	// Draining names machines that were declared before and are not now:
	// they take no new work and their running jobs are left alone.
	Draining []string `json:"draining,omitempty"`
}

// WhyInstance explains why one queued instance waits, as
// GET /v1/jobs/{ref}/why returns it.
type WhyInstance struct {
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	// Reason is one line a person reads: "8 machines lack key mathlab;
	// 3 have mem<=10; 1 has no free slot".
	Reason     string      `json:"reason"`
	Rejections []Rejection `json:"rejections,omitempty"`
}

// Rejection is how many machines one filter removed, and why.
type Rejection struct {
	Filter string `json:"filter"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// Server is one member of the server group, as GET /v1/servers returns it.
type Server struct {
	Name      string `json:"name"`
	Address   string `json:"address"` // Raft address
	HTTP      string `json:"http,omitempty"`
	Role      string `json:"role"` // leader, follower, candidate, unknown
	Term      uint64 `json:"term"`
	LastIndex uint64 `json:"last_index"`
	Leader    string `json:"leader"` // the leader's name as this server sees it
	Error     string `json:"error,omitempty"`
	// LastContact is how long ago this server last heard from the leader
	// ("1.2ms"), "leader" on the leader, or "never".
	LastContact string `json:"last_contact,omitempty"`
	// Healthy is true when the server answered, sees a leader, is the
	// leader or heard from it within two heartbeat timeouts, can write
	// its log, and its log holds what the leader committed.
	Healthy bool `json:"healthy"`
	// Problem says why the server is unhealthy ("log writes failing for
	// 12s: ...: no space left on device", "behind the leader by 169
	// entries"); empty when it is healthy or did not say.
	Problem string `json:"problem,omitempty"`
	// CommitIndex is the index of the last entry the server knows
	// committed; a follower compares its log with the leader's.
	CommitIndex uint64 `json:"commit_index,omitempty"`
	// Version is the server's build version ("v1.2.0-3-gabc1234"); empty
	// from a server too old to say.
	Version string `json:"version,omitempty"`
	// CommandLevel is the highest log command type the server's build
	// applies; 0 from a server too old to say.
	CommandLevel int `json:"command_level,omitempty"`
}

// Facts is what a stub reports about its machine.
type Facts struct {
	Name     string   `json:"name"`
	Arch     string   `json:"arch"`
	CPUs     int      `json:"cpus"`
	MemoryMB int64    `json:"memory_mb"`
	Mounts   []string `json:"mounts,omitempty"`
	// Keys are extra keys beyond the architecture, which is always a key.
	Keys []string `json:"keys,omitempty"`
	// MType and Attrs come from the stub's init file (--init): its claimed
	// machine type and attributes such as mem, rating, nprocs.
	MType string             `json:"mtype,omitempty"`
	Attrs map[string]float64 `json:"attrs,omitempty"`
	Load  float64            `json:"load"`
	// HTTPAddr is the stub's API address, host:port.
	HTTPAddr string `json:"http_addr"`
	// GossipAddr is the address the stub's gossip node advertises,
	// host:port; empty when the stub does not gossip. A leader that does
	// not see the machine in its gossip pool joins it there.
	GossipAddr string `json:"gossip_addr,omitempty"`
}

// StartRequest asks a stub to start one attempt of an instance. A stub
// treats a repeated (JobID, Instance, Attempt) as already done.
type StartRequest struct {
	JobID    uint64   `json:"job_id"`
	JobName  string   `json:"job_name"`
	Owner    string   `json:"owner"`
	Instance int      `json:"instance"`
	Attempt  uint64   `json:"attempt"`
	Binary   string   `json:"binary"`
	Args     []string `json:"args,omitempty"`
	Env      []string `json:"env,omitempty"`
	// Dir, when set, is the directory the job starts in (JobSpec.Dir);
	// the job's stdout and stderr stay in its exec dir.
	Dir string `json:"dir,omitempty"`
	// Servers are HTTP addresses of the server group, a hint for where to
	// send CHILD events.
	Servers []string `json:"servers,omitempty"`
	// MaxRunSeconds, when positive, is the queue's run limit: the stub
	// sends SIGTERM to the group when it passes and SIGKILL GraceMS later.
	MaxRunSeconds int64 `json:"max_run_seconds,omitempty"`
	// MaxMemMB, when positive, is the queue's memory limit: the stub kills
	// the group when its resident memory exceeds it.
	MaxMemMB int64 `json:"max_mem_mb,omitempty"`
	// GraceMS is the time between SIGTERM and SIGKILL for limits.
	GraceMS int64 `json:"grace_ms,omitempty"`
	// Restartable is set for jobs with a restart policy: the servers may
	// start this instance elsewhere once the stub's lease has expired, so
	// the stub must stop the attempt when its lease runs out.
	Restartable bool `json:"restartable,omitempty"`
	// OwnerPolicy is the job's queue's desktop policy (vacate_after,
	// keep_suspended, suspend in the database language's canonical text):
	// how the stub treats the job when the machine's owner returns,
	// overriding the machine's own; nil to follow the machine's. A stub
	// that predates it ignores it.
	OwnerPolicy map[string]string `json:"owner_policy,omitempty"`
	// MachineIndex is the Raft index that last changed the machine's
	// record (its ModifyIndex) when the leader sent this Start. A lease
	// expiry and its restoration both raise it, and lease renewals tell
	// the stub its current value (LeaseResponse.MachineIndex): a
	// restartable Start with an older index was sent before the machine
	// last lost its lease, and its instance may run elsewhere by now, so
	// the stub refuses it. The leader always sets it.
	MachineIndex uint64 `json:"machine_index,omitempty"`
}

// StartBatchRequest asks a stub to start several attempts in one request,
// the body of POST /v1/starts. The stub runs them concurrently. Repeating
// a Start for the same (job, instance, attempt) is harmless: it starts
// nothing.
//
// The server commits each started attempt's CHILD_REGISTER from the
// answer (StartResult.Register); the stub sends it again only just before
// the attempt's CHILD_TERM. A stub answers a repeated Start of an attempt
// it runs or ran with its REGISTER again, so a server that lost the
// answer gets it by sending the Start again.
type StartBatchRequest struct {
	Starts []StartRequest `json:"starts"`
}

// StartBatchResponse answers POST /v1/starts: one result per Start of the
// request, in the same order.
type StartBatchResponse struct {
	Results []StartResult `json:"results"`
}

// StartResult is the outcome of one Start of a batch. Status is an HTTP
// status: 200 when the stub took it (Started is false when the attempt
// was already known), 400 for a request it cannot run, 409 when the
// attempt is restartable and the stub's lease has expired, 503 when the
// stub is shutting down, 500 for any other failure. Error says why when
// Status is not 200.
type StartResult struct {
	Status  int    `json:"status"`
	Started bool   `json:"started,omitempty"`
	Error   string `json:"error,omitempty"`
	// Register is the attempt's CHILD_REGISTER when a supervisor runs (or
	// ran) the attempt, whether this Start started it or an earlier one
	// did; nil when its exec failed.
	Register *ChildEvent `json:"register,omitempty"`
}

// AttemptRef names one attempt of one instance.
type AttemptRef struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
}

// String names the attempt as "job.instance.attempt", e.g. "12.0.1".
func (r AttemptRef) String() string {
	return fmt.Sprintf("%d.%d.%d", r.JobID, r.Instance, r.Attempt)
}

// LeaseRequest renews a stub's lease, the body of POST /v1/lease. Running
// lists the attempts the stub runs now.
type LeaseRequest struct {
	Machine string       `json:"machine"`
	Running []AttemptRef `json:"running,omitempty"`
	// Load is the machine's load average. A stub sends it once a server's
	// answer said it takes it (LeaseResponse.TakesLoad), as every server
	// does; nil when the stub could not read it.
	Load *float64 `json:"load,omitempty"`
	// Token is the token of the last answer the stub received, echoed
	// unread: it proves to the leader that the stub holds the lease that
	// answer granted (see LeaseToken). Nil before the first answer.
	Token *LeaseToken `json:"token,omitempty"`
	// TokenAgeMS is how long before sending this request the answer that
	// carried Token arrived: the leader adds it to Token.Issued for a
	// later bound on when this request was sent.
	TokenAgeMS int64 `json:"token_age_ms,omitempty"`
	// Problem is why the stub drains its machine ("exec dir full: 0 B
	// free", "health check: ..."); empty while the machine is healthy.
	// The leader records a change (a MachineHealth command): the machine
	// takes no new work while it has a problem.
	Problem string `json:"problem,omitempty"`
	// Asleep is why the machine's owner policy puts it to sleep ("console
	// login", "load 3.2 > 2"); empty while it is awake, nil when the stub
	// does not report (the record stays as it is). The leader records a
	// change (a MachineAsleep command): the machine takes no new work
	// while it sleeps. A stub sends it only while the last answer said
	// the servers take it (LeaseResponse.TakesAsleep): a server that
	// predates it refuses a request with a field it does not know.
	Asleep *string `json:"asleep,omitempty"`
	// OwnLoad is the part of Load the stub's own jobs caused (their CPU,
	// averaged as the load average is); the leader's scheduler scores the
	// machine by Load less OwnLoad, plus the load its jobs impose. Sent
	// under the same condition as Asleep.
	OwnLoad *float64 `json:"own_load,omitempty"`
	// IdleS is how many seconds ago the machine's owner last used it (a
	// session in utmp, keyboard or mouse input); nil when the stub does
	// not watch for that. Jobs ask for idle machines with idle>=MINUTES.
	// Sent under the same condition as Asleep.
	IdleS *int64 `json:"idle_s,omitempty"`
}

// LeaseToken is the leader's receipt for a lease it granted, which the
// stub echoes in its next renewal. Issued is when the leader granted it
// and Basis a time before which the granted request was not sent: the
// Issued of the token that request echoed plus its TokenAgeMS (0 when it
// echoed none of this leadership), both in nanoseconds of the
// leadership's own clock. A stub that echoes a token therefore holds a
// lease until at least Basis plus the lease duration, and tells no other
// stub that its lease ran out until OutageVouchWithin before that (see
// OutageStatement).
type LeaseToken struct {
	Leadership uint64 `json:"leadership"`
	Issued     int64  `json:"issued"`
	Basis      int64  `json:"basis,omitempty"`
	// Pool and GraceMS are the PoolSize and OutageGraceMS of the answer
	// that carried the token.
	Pool    int   `json:"pool,omitempty"`
	GraceMS int64 `json:"grace_ms,omitempty"`
}

// LeaseResponse grants a lease: it holds for LeaseMS from when the stub
// sent the request; the stub renews every RenewMS.
type LeaseResponse struct {
	LeaseMS int64 `json:"lease_ms"`
	RenewMS int64 `json:"renew_ms"`
	// TakesLoad is set by servers that read LeaseRequest.Load: the stub
	// then reports its load with every renewal instead of gossiping each
	// change to the whole pool.
	TakesLoad bool `json:"takes_load,omitempty"`
	// TakesAsleep is set by a leader whose every fellow server records
	// LeaseRequest.Asleep (MachineAsleep): the stub then reports its owner
	// policy's verdict with its renewals.
	TakesAsleep bool `json:"takes_asleep,omitempty"`
	// MachineIndex is the machine record's ModifyIndex after this
	// renewal (see StartRequest.MachineIndex); 0 when the machine has not
	// joined yet.
	MachineIndex uint64 `json:"machine_index,omitempty"`
	// Token is the receipt to echo in the next renewal.
	Token *LeaseToken `json:"token,omitempty"`
	// PoolSize is how many machines the database knows, and Position the
	// machine's place among them in the order they first joined (from 1;
	// 0 when it has not joined). A stub whose lease ran out keeps its
	// restartable work only while a majority of those PoolSize machines
	// say their leases ran out too (see OutageStatement).
	PoolSize int `json:"pool_size,omitempty"`
	Position int `json:"position,omitempty"`
	// OutageGraceMS is how long past its lease a stub may keep
	// restartable work while a majority of the pool is cut off from the
	// servers too; 0 for no such grace, -1 for no limit.
	OutageGraceMS int64 `json:"outage_grace_ms,omitempty"`
	// Owner is the owner-policy settings the database gives the machine,
	// sent with every renewal so that a stub follows a database loaded
	// at run time. Nil from a server that predates them (the stub keeps
	// what it has); a stub that predates them ignores the field.
	Owner *OwnerSettings `json:"owner,omitempty"`
}

// OwnerSettings is the owner-policy settings the database gives a
// machine (LeaseResponse.Owner).
type OwnerSettings struct {
	// Settings are by name (sleep_on_login, sleep_on_input,
	// sleep_on_load, load_monitor, available, vacate_after,
	// keep_suspended) in the database language's canonical text (see
	// dblang.OwnerDuration, OwnerWindows, OwnerYes); empty when the
	// database gives none.
	Settings map[string]string `json:"settings,omitempty"`
	// Declared is set when the database declares the machine: its
	// settings then win over the stub's init file's, as attributes do;
	// otherwise they are those of the mtype the init file claims, and the
	// init file's own win over them.
	Declared bool `json:"declared,omitempty"`
}

// The outage protocol's timing, which the leader's expiry rule counts on
// (server.expirable). A stub says its lease ran out (OutageStatement)
// once less than OutageVouchWithin of it is left, so stubs whose last
// renewals were a renewal interval apart agree that the servers are gone.
// It uses an OutageWitness answer only when it arrives within
// OutageAnswerWithin of asking (statements that come later might have
// been made after the servers came back), and one answer lets it keep
// restartable work for OutageCoverFor after it asked.
const (
	OutageVouchWithin  = 900 * time.Millisecond
	OutageAnswerWithin = 300 * time.Millisecond
	OutageCoverFor     = 300 * time.Millisecond
)

// OutageStatement is a stub's answer to GET /v1/outage: whether its own
// lease has run out, or will within OutageVouchWithin. A stub says
// Expired only when it knows its place in the pool (Position, PoolSize
// from its last renewal).
type OutageStatement struct {
	Machine  string `json:"machine"`
	Expired  bool   `json:"expired"`
	Position int    `json:"position,omitempty"`
	PoolSize int    `json:"pool_size,omitempty"`
	// ProvenPool is the pool size the leader knows this stub knows: that
	// of the token echoed in its last renewal the leader answered. Until
	// it reaches the pool's size, the leader does not declare this
	// machine's lease expired within the outage grace (the stub might be
	// counting a smaller pool).
	ProvenPool int `json:"proven_pool,omitempty"`
}

// OutageWitness is a stub's answer to POST /v1/outage/witness: the
// statements of every stub it could reach in one round that began after
// the request arrived.
type OutageWitness struct {
	Statements []OutageStatement `json:"statements"`
}

// SignalRequest asks a stub to signal the process group of an attempt.
type SignalRequest struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	// Signal is a name such as "TERM", "KILL", "INT"; "TERM" when empty.
	Signal string `json:"signal,omitempty"`
	// GraceMS, when positive, sends SIGKILL to the group if it is still
	// alive that many milliseconds after Signal.
	GraceMS int64 `json:"grace_ms,omitempty"`
}

// Child event kinds: the paper's CHILD_REGISTER and CHILD_TERM.
const (
	ChildRegister = "register"
	ChildTerm     = "term"
)

// ChildEvent is a stub's report that an attempt started or ended, an event
// of POST /v1/children.
type ChildEvent struct {
	Kind     string    `json:"kind"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	At       time.Time `json:"at"`
	PID      int       `json:"pid,omitempty"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	// Error is set when the binary could not be started at all.
	Error string `json:"error,omitempty"`
	// Reason is set when the stub ended the attempt itself: "run limit of
	// 200m exceeded", "memory limit of 20 MB exceeded".
	Reason   string `json:"reason,omitempty"`
	UserMS   int64  `json:"user_ms,omitempty"`
	SysMS    int64  `json:"sys_ms,omitempty"`
	MaxRSSKB int64  `json:"max_rss_kb,omitempty"`
	// Leftovers are the processes of the job still alive after its first
	// process ended (daemonized children, a forgotten `&`); the supervisor
	// killed them. Set on a CHILD_TERM only.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// MachineFault is set on a CHILD_TERM when the attempt ended because
	// of its machine, not its job: the stub could not make the attempt's
	// directory or output files, or its execution or data directory was
	// full (Error or Reason says which). The servers queue the instance
	// again without counting a restart, once every server knows the
	// field.
	MachineFault bool `json:"machine_fault,omitempty"`
}

// Leftover is a process that outlived its job's first process and was
// killed so that no orphan survives the job.
type Leftover struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"` // the process's name from /proc/PID/comm
}

// ReasonLeaseExpired is the Reason of an attempt its stub stopped because
// its lease ran out; the servers start such an instance again elsewhere.
const ReasonLeaseExpired = "lease expired: the servers may run it elsewhere"

// ChildEventBatch is the body of POST /v1/children: a stub's CHILD events,
// an attempt's in the order they happened.
type ChildEventBatch struct {
	Events []ChildEvent `json:"events"`
}

// ChildEventBatchResponse answers POST /v1/children with one result per
// event, in the order sent.
type ChildEventBatchResponse struct {
	Results []ChildEventResult `json:"results"`
}

// ChildEventResult is the outcome of one event of a batch: committed at
// Index, or refused with Error, in which case resending it cannot help.
// Stale is true when the event was for an attempt that is no longer
// current: it was recorded and changed nothing, and the stub should not
// resend it.
type ChildEventResult struct {
	Index uint64 `json:"index,omitempty"`
	Stale bool   `json:"stale,omitempty"`
	Error string `json:"error,omitempty"`
}

// Roles carried in gossip metadata.
const (
	RoleServer = "server"
	RoleStub   = "stub"
)

// NodeMeta is the memberlist metadata every server and stub gossips.
// Encoded as JSON it must stay under memberlist's 512-byte limit.
type NodeMeta struct {
	Role string `json:"r"`
	HTTP string `json:"h"`
	// Raft and Expect are set by servers: the Raft address and the
	// --bootstrap-expect value.
	Raft   string `json:"ra,omitempty"`
	Expect int    `json:"e,omitempty"`
	// Load is the stub's load average, refreshed as it changes.
	Load float64 `json:"l,omitempty"`
	// Level is set by servers: the highest Raft command type the server
	// applies. Every server sets it; a member that gossips none counts as
	// 1.0 (21).
	Level int `json:"cl,omitempty"`
	// Leaving is set by a stub shutting down cleanly, just before it
	// leaves the pool, so that the servers log its departure as news,
	// not as a failure.
	Leaving bool `json:"lv,omitempty"`
	// ExecUsed is set by stubs: the bytes the files in the exec dir
	// take, gossiped when it changes by a tenth or more and at least
	// 1 MiB (so 0 until it reaches 1 MiB), since a change goes to every
	// member of the pool.
	ExecUsed int64 `json:"xu,omitempty"`
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
