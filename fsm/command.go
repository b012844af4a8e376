package fsm

import (
	"encoding/json"
	"fmt"
	"time"
)

// MessageType identifies a command in the Raft log. Values are assigned by
// hand, append-only: a retired type keeps its number as a deprecated
// constant so old logs still decode.
type MessageType uint8

// The commands. Never renumber, never reuse.
const (
	StubJoinType       MessageType = 1
	StubLeaveType      MessageType = 2
	SubmitType         MessageType = 3
	PlaceType          MessageType = 4
	ChildRegisterType  MessageType = 5
	ChildTermType      MessageType = 6
	KillType           MessageType = 7
	LoadDatabaseType   MessageType = 8
	SetQueueType       MessageType = 9
	RemoveQueueType    MessageType = 10
	ReserveType        MessageType = 11
	UnreserveType      MessageType = 12
	SuspendType        MessageType = 13
	ResumeType         MessageType = 14
	RestartJobType     MessageType = 15
	LeaseExpiredType   MessageType = 16
	LeaseRestoredType  MessageType = 17
	LeaderElectedType  MessageType = 18 // proposed with IgnoreUnknownFlag: informational
	ChildEventsType    MessageType = 19 // since command level 19; see ChildEvents
	SubmitPlaceType    MessageType = 20 // since command level 20; see SubmitPlace
	SubmitsType        MessageType = 21 // since command level 21; see Submits
	MachineHealthType  MessageType = 22 // since command level 22; see MachineHealth
	TokenIssueType     MessageType = 23 // since command level 23; see TokenIssue
	TokenRevokeType    MessageType = 24 // since command level 24; see TokenRevoke
	ServerRemovedType  MessageType = 25 // proposed with IgnoreUnknownFlag: informational
	SubmitAfterType    MessageType = 26 // since command level 26; see JobSpec.After
	MachineAsleepType  MessageType = 27 // since command level 27; see MachineAsleep
	SubmitDirType      MessageType = 28 // since command level 28; see JobSpec.Dir
	SubmitCronType     MessageType = 29 // since command level 29; see JobSpec.Cron
	CronFireType       MessageType = 30 // since command level 30; see CronFire
	MailSentType       MessageType = 31 // since command level 31; see MailSent
	JobsExpireType     MessageType = 32 // since command level 32; see JobsExpire
	SubmitLimitsType   MessageType = 33 // since command level 33; see JobSpec.TimeLimitSeconds
	StubRestartingType MessageType = 34 // since command level 34; see StubRestarting
	SubmitGangType     MessageType = 35 // since command level 35; see JobSpec.Gang
	// 36 was never assigned (two branches built in parallel).
	SubmitFilesType     MessageType = 37 // since command level 37; see JobSpec.CopyInBlob
	OutputsKeptType     MessageType = 38 // since command level 38; see OutputsKept
	FairShareStartType  MessageType = 39 // since command level 39; see FairShareStart
	SubmitResourcesType MessageType = 40 // since command level 40; see JobSpec.CPUs
	SessionEventType    MessageType = 41 // proposed with IgnoreUnknownFlag: informational; see SessionEvent
	CheckpointKeptType  MessageType = 42 // since command level 42; see CheckpointKept
	PrimeTimeSwitchType MessageType = 43 // since command level 43; see PrimeTimeSwitch
	PreemptType         MessageType = 44 // since command level 44; see Preempt
	PolicyLoadType      MessageType = 45 // since command level 45; see PolicyLoad (its errors with IgnoreUnknownFlag)
)

// CommandLevel is the highest command type this build applies. Servers
// gossip it, and the leader proposes a command newer than every voter's
// level only when all of them have it: a replica that meets an unknown
// type must stop.
const CommandLevel = PolicyLoadType

// IgnoreUnknownFlag marks a command that a server which does not know its
// type may skip instead of stopping. Commands whose loss would make replicas
// diverge must not set it.
const IgnoreUnknownFlag MessageType = 128

// String names the type for logs and errors.
func (t MessageType) String() string {
	switch t &^ IgnoreUnknownFlag {
	case StubJoinType:
		return "StubJoin"
	case StubLeaveType:
		return "StubLeave"
	case SubmitType:
		return "Submit"
	case PlaceType:
		return "Place"
	case ChildRegisterType:
		return "ChildRegister"
	case ChildTermType:
		return "ChildTerm"
	case KillType:
		return "Kill"
	case LoadDatabaseType:
		return "LoadDatabase"
	case SetQueueType:
		return "SetQueue"
	case RemoveQueueType:
		return "RemoveQueue"
	case ReserveType:
		return "Reserve"
	case UnreserveType:
		return "Unreserve"
	case SuspendType:
		return "Suspend"
	case ResumeType:
		return "Resume"
	case RestartJobType:
		return "RestartJob"
	case LeaseExpiredType:
		return "LeaseExpired"
	case LeaseRestoredType:
		return "LeaseRestored"
	case LeaderElectedType:
		return "LeaderElected"
	case ChildEventsType:
		return "ChildEvents"
	case SubmitPlaceType:
		return "SubmitPlace"
	case SubmitsType:
		return "Submits"
	case MachineHealthType:
		return "MachineHealth"
	case TokenIssueType:
		return "TokenIssue"
	case TokenRevokeType:
		return "TokenRevoke"
	case ServerRemovedType:
		return "ServerRemoved"
	case SubmitAfterType:
		return "SubmitAfter"
	case MachineAsleepType:
		return "MachineAsleep"
	case SubmitDirType:
		return "SubmitDir"
	case SubmitCronType:
		return "SubmitCron"
	case CronFireType:
		return "CronFire"
	case MailSentType:
		return "MailSent"
	case JobsExpireType:
		return "JobsExpire"
	case SubmitLimitsType:
		return "SubmitLimits"
	case StubRestartingType:
		return "StubRestarting"
	case SubmitGangType:
		return "SubmitGang"
	case SubmitFilesType:
		return "SubmitFiles"
	case OutputsKeptType:
		return "OutputsKept"
	case FairShareStartType:
		return "FairShareStart"
	case SubmitResourcesType:
		return "SubmitResources"
	case SessionEventType:
		return "SessionEvent"
	case CheckpointKeptType:
		return "CheckpointKept"
	case PrimeTimeSwitchType:
		return "PrimeTimeSwitch"
	case PreemptType:
		return "Preempt"
	case PolicyLoadType:
		return "PolicyLoad"
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// Encode returns the log entry for a command: its type byte then its JSON body.
func Encode(t MessageType, body any) ([]byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %v: %w", t, err)
	}
	out := make([]byte, 0, len(data)+1)
	out = append(out, byte(t))
	return append(out, data...), nil
}

// MachineFacts is what a stub reports about its machine: what it detected
// and what its init file claims (MType, Attrs, and the keys and mounts
// listed there).
type MachineFacts struct {
	Name     string             `json:"name"`
	Arch     string             `json:"arch"`
	CPUs     int                `json:"cpus"`
	MemoryMB int64              `json:"memory_mb"`
	Mounts   []string           `json:"mounts,omitempty"`
	Keys     []string           `json:"keys,omitempty"`
	MType    string             `json:"mtype,omitempty"`
	Attrs    map[string]float64 `json:"attrs,omitempty"`
	Addr     string             `json:"addr"`
	// GPUs are the GPUs the stub detected (nvidia-smi), in index order;
	// GPUs declared as attributes replace them (effectiveResources).
	// DiskMB is the free disk under its exec dir when it joined, what
	// instances may claim with --disk. Both since snapshot version 14;
	// an older replica ignores them, and no job asks for them before
	// every server applies command level 40.
	GPUs   []GPU `json:"gpus,omitempty"`
	DiskMB int64 `json:"disk_mb,omitempty"`
	// Unenforced is what the stub cannot enforce on the machine, one
	// line each ("cpus: no cpu controller"), for netstatus -m; since
	// snapshot version 14.
	Unenforced []string `json:"unenforced,omitempty"`
}

// StubJoin commits a machine to the pool, or brings a known one back up
// with fresh facts.
type StubJoin struct {
	At      time.Time    `json:"at"`
	Machine MachineFacts `json:"machine"`
}

// StubLeave takes a machine out of the pool; what ran there is lost.
type StubLeave struct {
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
	Reason  string    `json:"reason"`
}

// JobSpec is the job as the log records it.
type JobSpec struct {
	Name          string            `json:"name,omitempty"`
	Binaries      map[string]string `json:"binaries"`
	Args          []string          `json:"args,omitempty"`
	Env           []string          `json:"env,omitempty"`
	Min           int               `json:"min,omitempty"`
	Keys          []string          `json:"keys,omitempty"`
	Requirements  []Requirement     `json:"requirements,omitempty"`
	Mounts        []string          `json:"mounts,omitempty"`
	Machines      []string          `json:"machines,omitempty"`
	Unique        bool              `json:"unique,omitempty"`
	MaxPerMachine int               `json:"max_per_machine,omitempty"`
	Load          float64           `json:"load,omitempty"`
	MemoryMB      int64             `json:"memory_mb,omitempty"`
	Queue         string            `json:"queue,omitempty"`
	Restart       string            `json:"restart,omitempty"`
	MaxRestarts   int               `json:"max_restarts,omitempty"`
	// After, AfterOK and AfterNotOK are the ids of the jobs this one
	// waits for (after=, afterok=, afternotok=), resolved from names by
	// the server at submit. Since command level 26: a Submit that sets
	// any of them is proposed as a SubmitAfterType entry, which an older
	// replica refuses (it stops) rather than ignore the fields.
	After      []uint64 `json:"after,omitempty"`
	AfterOK    []uint64 `json:"afterok,omitempty"`
	AfterNotOK []uint64 `json:"afternotok,omitempty"`
	// Dir is the working directory the job's processes start in
	// (netexec --chdir), an absolute path on the machine; empty means the
	// attempt's exec dir. Since command level 28: a Submit that sets it
	// is proposed as a SubmitDirType entry, which an older replica
	// refuses (it stops) rather than run the job elsewhere.
	Dir string `json:"dir,omitempty"`
	// Cron, when set, makes the job a cron job: a template that runs
	// nothing itself and makes one run job per firing of the schedule
	// (cron.go). Catchup (none or last, "" = last) and Overlap (skip or
	// allow, "" = skip) say what a late firing and a firing while the
	// previous run still runs do. Since command level 29: a Submit that
	// sets Cron is proposed as a SubmitCronType entry, which an older
	// replica refuses (it stops) rather than run the template once.
	Cron    string `json:"cron,omitempty"`
	Catchup string `json:"catchup,omitempty"`
	Overlap string `json:"overlap,omitempty"`
	// Mail is who the job's mail goes to (mail, mail=ADDRESS): an
	// address, a login, or MailOwner; "" for none. MailTypes are the
	// events mailed (mail_type: begin, end, fail, requeue, all); none
	// means end and fail. Since command level 31: the server submits a
	// job asking for mail only when every server applies MailSentType,
	// so no replica ignores the fields.
	Mail      string   `json:"mail,omitempty"`
	MailTypes []string `json:"mail_types,omitempty"`
	// TimeLimitSeconds is the job's own time limit (time=, netexec
	// --time), within its queue's nq_maxrun; WarnSignal (a name without
	// SIG) is sent WarnLeadSeconds before the limit (signal=SIG@LEAD).
	// Zero values mean none. Since command level 33: a Submit that sets
	// any of them is proposed as a SubmitLimitsType entry, which an older
	// replica refuses (it stops) rather than run the job unlimited.
	TimeLimitSeconds int64  `json:"time_limit_seconds,omitempty"`
	WarnSignal       string `json:"warn_signal,omitempty"`
	WarnLeadSeconds  int64  `json:"warn_lead_seconds,omitempty"`
	// Gang makes the job a gang (netexec --gang, the job option gang):
	// its instances are placed all in one Place or not at all, and they
	// live and die together (gang.go). Since command level 35: a Submit
	// that sets it is proposed as a SubmitGangType entry, which an older
	// replica refuses (it stops) rather than place the instances one by
	// one.
	Gang bool `json:"gang,omitempty"`
	// CopyIn names the files and directories sent with the job (their
	// names in the exec dir, for display); CopyInBlob is the sha256 (hex)
	// of the tar archive of them the servers keep in their blob stores,
	// CopyInSize its size in bytes. CopyOut are the paths (globs allowed)
	// taken from the exec dir when an attempt ends. Since command level
	// 37: a Submit that sets any of them is proposed as a SubmitFilesType
	// entry, which an older replica refuses (it stops) rather than run the
	// job without its files.
	CopyIn     []string `json:"copy_in,omitempty"`
	CopyInBlob string   `json:"copy_in_blob,omitempty"`
	CopyInSize int64    `json:"copy_in_size,omitempty"`
	CopyOut    []string `json:"copy_out,omitempty"`
	// CPUs is how many of a machine's CPUs (slots) each instance takes
	// (netexec --cpus; 0 means 1); GPUs how many GPUs, of GPUType when
	// set (--gpus [TYPE:]N); Gres the generic resources by name (--gres
	// NAME:N); DiskMB the local disk claimed (--disk); Licenses the
	// pool-wide licences held from start to end (--license NAME:N).
	// Since command level 40: a Submit that asks for any of them
	// (HasResources) is proposed as a SubmitResourcesType entry, which
	// an older replica refuses (it stops) rather than place the job
	// without counting them.
	CPUs int `json:"cpus,omitempty"`
	// ExclusiveCPUs (--exclusive-cpus) gives each instance a cpuset of
	// its CPUs rather than a share of the machine's time.
	ExclusiveCPUs bool           `json:"exclusive_cpus,omitempty"`
	GPUs          int            `json:"gpus,omitempty"`
	GPUType       string         `json:"gpu_type,omitempty"`
	Gres          map[string]int `json:"gres,omitempty"`
	DiskMB        int64          `json:"disk_mb,omitempty"`
	Licenses      map[string]int `json:"licenses,omitempty"`
	// Checkpoint are the files and directories (relative to the exec
	// dir, globs allowed) kept when an attempt exits with CheckpointExit
	// (netexec --checkpoint, --checkpoint-exit): the instance starts
	// again at once with them in its new exec dir, and so does every
	// later attempt (checkpoints.go). A job that checkpoints is
	// restartable. Since command level 42: the server submits such a job
	// only when every server applies CheckpointKeptType, so no replica
	// ignores the fields.
	Checkpoint     []string `json:"checkpoint,omitempty"`
	CheckpointExit int      `json:"checkpoint_exit,omitempty"`
	// Priority orders the job's waiting instances within its queue
	// priority, higher first, before the fair-share or site policy rank
	// and submit order (queue.Item.JobPriority); MinJobPriority to
	// MaxJobPriority, 0 for none. Only the site policy's admit sets it
	// (server/policy), and a policy loads only once every server applies
	// command level 45 (FeaturePolicy), so it needs no command level of
	// its own: no replica that ignores it ever sees a job that has it.
	Priority int `json:"priority,omitempty"`
}

// MinJobPriority and MaxJobPriority bound JobSpec.Priority.
const (
	MinJobPriority = -1000
	MaxJobPriority = 1000
)

// HasFiles reports whether the job moves files (copy_in or copy_out),
// which only command level 37 records.
func (s *JobSpec) HasFiles() bool {
	return s.CopyInBlob != "" || len(s.CopyIn) > 0 || len(s.CopyOut) > 0
}

// HasLimits reports whether the job sets limits of its own that only
// command level 33 records (TimeLimitSeconds, WarnSignal).
func (s *JobSpec) HasLimits() bool {
	return s.TimeLimitSeconds != 0 || s.WarnSignal != "" || s.WarnLeadSeconds != 0
}

// HasDependencies reports whether the job waits for other jobs.
func (s *JobSpec) HasDependencies() bool {
	return len(s.After)+len(s.AfterOK)+len(s.AfterNotOK) > 0
}

// Requirement is one comparison on a numeric machine attribute.
type Requirement struct {
	Attr  string  `json:"attr"`
	Op    string  `json:"op"`
	Value float64 `json:"value"`
}

// Restart policies.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// DefaultMaxRestarts bounds restarts per instance when the job names none.
const DefaultMaxRestarts = 3

// Restartable reports whether the job has a restart policy, or keeps
// checkpoints: its instances may be started elsewhere when their
// machine's lease expires.
func (s *JobSpec) Restartable() bool {
	return s.Restart == RestartOnFailure || s.Restart == RestartAlways || s.HasCheckpoint()
}

// QueueName is the queue the job goes to: the one it names, else the
// default queue.
func (s *JobSpec) QueueName() string {
	if s.Queue == "" {
		return DefaultQueue
	}
	return s.Queue
}

// PerMachineLimit is how many of the job's instances one machine may hold;
// 0 means no bound beyond the machine's slots.
func (s *JobSpec) PerMachineLimit() int {
	if s.Unique {
		return 1
	}
	return s.MaxPerMachine
}

// Submit creates a job. Owner is the identity the server authenticated (or,
// today, the one the client named); commands never learn how it was proven.
type Submit struct {
	At             time.Time `json:"at"`
	Owner          string    `json:"owner"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Spec           JobSpec   `json:"spec"`
}

// Assignment places one attempt of an instance on a machine, running the
// binary of Key.
type Assignment struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	Machine  string `json:"machine"`
	Key      string `json:"key"`
}

// Place is the scheduler's decision for a batch of instances, planned
// against the state at PlannedAtIndex. Apply re-checks every assignment.
type Place struct {
	At             time.Time    `json:"at"`
	PlannedAtIndex uint64       `json:"planned_at_index"`
	Assignments    []Assignment `json:"assignments"`
}

// ChildRegister is the paper's CHILD_REGISTER: an attempt started.
type ChildRegister struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	PID      int       `json:"pid"`
}

// ChildTerm is the paper's CHILD_TERM: an attempt ended. Error is set when
// the binary could not be started.
type ChildTerm struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	Error    string    `json:"error,omitempty"`
	// Reason is set when the stub ended the attempt for a limit.
	Reason string `json:"reason,omitempty"`
	// LeaseLost is set when the stub ended the attempt because its lease
	// ran out: the instance starts again elsewhere, as after LeaseExpired.
	LeaseLost bool  `json:"lease_lost,omitempty"`
	UserMS    int64 `json:"user_ms,omitempty"`
	SysMS     int64 `json:"sys_ms,omitempty"`
	MaxRSSKB  int64 `json:"max_rss_kb,omitempty"`
	// Leftovers are processes of the job that outlived its first process
	// and were killed. The field was added to ChildTerm without a new
	// type: it is optional, and a replica that predates it ignores it.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// MachineFault is set when the attempt ended because of its machine,
	// not its job: the stub could not make its directory or output files,
	// or its execution or data directory was full. The instance goes back
	// to the queue without counting a restart, whatever its restart
	// policy. Since command level 22: a replica that predates it would
	// record a failure, so the leader sets it only when every server
	// applies MachineHealthType.
	MachineFault bool `json:"machine_fault,omitempty"`
}

// Leftover is a process that outlived its job's first process and was
// killed by the job's supervisor.
type Leftover struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Kill ends a job: queued instances never run, placed and running ones are
// marked for the leader to signal.
type Kill struct {
	At     time.Time `json:"at"`
	JobID  uint64    `json:"job_id"`
	By     string    `json:"by"`
	Signal string    `json:"signal,omitempty"`
	// Runs, on a cron job, kills its unfinished runs too; a kill of a cron
	// job without it ends the schedule only. Only cron jobs, which exist
	// once every server applies CronFireType, give it a meaning.
	Runs bool `json:"runs,omitempty"`
}

// LoadDatabase replaces the declared database (keys, machine types,
// machine declarations, queues, admins) as one command. Machines declared
// before and not now are drained: no new work, running work left alone.
type LoadDatabase struct {
	At       time.Time `json:"at"`
	Source   string    `json:"source,omitempty"`
	By       string    `json:"by,omitempty"`
	Database Database  `json:"database"`
}

// SetQueue creates a queue or replaces its limits.
type SetQueue struct {
	At    time.Time     `json:"at"`
	By    string        `json:"by,omitempty"`
	Queue DeclaredQueue `json:"queue"`
}

// RemoveQueue removes a queue that holds no unfinished job.
type RemoveQueue struct {
	At   time.Time `json:"at"`
	By   string    `json:"by,omitempty"`
	Name string    `json:"name"`
}

// Reserve sets machines aside for Owner from From until Until (zero: until
// unreserved). The leader chose the machines; Apply checks they exist and
// that no other user's reservation overlaps the window.
type Reserve struct {
	At       time.Time `json:"at"`
	Owner    string    `json:"owner"`
	Machines []string  `json:"machines"`
	From     time.Time `json:"from"`
	Until    time.Time `json:"until,omitzero"`
}

// Unreserve ends reservations by id.
type Unreserve struct {
	At  time.Time `json:"at"`
	By  string    `json:"by"`
	IDs []uint64  `json:"ids"`
}

// JobControl is the body of Suspend, Resume and RestartJob.
type JobControl struct {
	At    time.Time `json:"at"`
	JobID uint64    `json:"job_id"`
	By    string    `json:"by"`
}

// LeaseExpired records that a machine's lease ran out: the leader heard no
// renewal for longer than the lease plus its margin, so the stub has
// stopped its restartable attempts. Those get new attempts elsewhere; the
// others become unknown.
type LeaseExpired struct {
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
}

// AttemptRef names one attempt of one instance.
type AttemptRef struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
}

// LeaseRestored records that an unreachable machine renewed its lease
// again; Running are the attempts its stub reports running, so unknown
// instances among them are running again.
type LeaseRestored struct {
	At      time.Time    `json:"at"`
	Machine string       `json:"machine"`
	Running []AttemptRef `json:"running,omitempty"`
}

// SubmitPlace is a Submit with the leader's placement of the new job's
// instances, planned at PlannedAtIndex when nothing else waited: one log
// entry, one disk write and one replication round from submit to placed,
// instead of a Submit and then a Place. Apply creates the job as Submit
// does, then, unless the Submit was refused or matched an earlier
// idempotency key, or instances of other jobs are queued (they come first
// in queue order and go to the scheduler's next pass), re-checks and
// applies the assignments as Place does, with the new job's ID in each.
// Instances not placed stay queued for the scheduler.
type SubmitPlace struct {
	Submit         Submit       `json:"submit"`
	PlannedAtIndex uint64       `json:"planned_at_index"`
	Assignments    []Assignment `json:"assignments"`
}

// Submits is a batch of Submits in one log entry, applied in order as if
// each were its own entry at this index: the jobs clients submit at the
// same time share one disk write and one replication round. A Submit
// whose idempotency key an earlier one of the batch used finds that job.
type Submits struct {
	Submits []Submit `json:"submits"`
}

// ChildEvents is a batch of CHILD events in one log entry, applied in
// order as if each were its own entry at this index: one entry, one disk
// write and one replication round for the events a stub reports together,
// instead of one per event. Exactly one of Register and Term is set in
// each event.
type ChildEvents struct {
	Events []ChildEvent `json:"events"`
}

// ChildEvent is one event of a ChildEvents batch.
type ChildEvent struct {
	Register *ChildRegister `json:"register,omitempty"`
	Term     *ChildTerm     `json:"term,omitempty"`
}

// MachineHealth records the health a machine's stub reports of itself:
// Problem says why the machine takes no new work ("exec dir full: 0 B
// free", the first line of a site's health check), and is empty once it
// is healthy again. It is apart from Draining, which the database
// declares: neither clears the other. The leader proposes it when a lease
// renewal reports a health other than the one recorded.
type MachineHealth struct {
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
	Problem string    `json:"problem,omitempty"`
}

// MachineAsleep records the owner policy's verdict a machine's stub
// reports of itself: Reason says why the machine is asleep ("console
// login", "load 3.2 > 2", "outside window") and is empty once it is awake
// again. An asleep machine takes no new work; its running work is the
// stub's to suspend, resume or vacate. It is apart from Draining and
// Unhealthy: none clears the others. The leader proposes it when a lease
// renewal reports a verdict other than the one recorded. Since command
// level 27: proposed only when every server applies it.
type MachineAsleep struct {
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
	Reason  string    `json:"reason,omitempty"`
}

// StubRestarting records that a machine's stub is stopping to start
// again (an upgrade, systemctl restart) while its jobs run on under the
// supervisor host: the machine is restarting, takes no new work, and its
// running instances stay running. The leader proposes it when the stub
// asks for a restart lease (client.LeaseRequest.Restarting) and grants
// that lease only once it is committed; a StubJoin ends it when the new
// stub is back, a LeaseExpired when it is not back within the restart
// grace. Since command level 34: proposed only when every server applies
// it.
type StubRestarting struct {
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
}

// LeaderElected records that Name won the election of Term; applying it
// changes nothing but the event ring.
type LeaderElected struct {
	At   time.Time `json:"at"`
	Name string    `json:"name"`
	Term uint64    `json:"term"`
}

// TokenIssue records an API token an admin (IssuedBy) issued for User.
// Hash is the hex SHA-256 of the whole token string: the token itself is
// shown once to the admin and never logged. The proposing server stamps
// IssuedAt and ExpiresAt; Apply reads no clock, so a token that expires
// stays in the state (until revoked) and servers refuse it at request
// time. Since command level 23: proposed only when every server applies
// it.
type TokenIssue struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Hash      string    `json:"hash"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	IssuedBy  string    `json:"issued_by"`
}

// TokenRevoke removes a token by ID: requests bearing it are refused from
// the entry's commit on. Reason says why, when an admin did not ask (the
// leader sweeping a token long expired). Since command level 24.
type TokenRevoke struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
}

// ServerRemoved records that admin By removed server Name from the Raft
// configuration. The removal itself is a Raft configuration change, which
// the FSM never sees; the leader proposes this entry after it, so that
// the removal appears among the events. Applying it changes nothing but
// the event ring; it is proposed with IgnoreUnknownFlag, so an older
// replica skips it.
type ServerRemoved struct {
	At   time.Time `json:"at"`
	Name string    `json:"name"`
	By   string    `json:"by"`
}

// CronFire is one firing of cron job JobID's schedule, at Scheduled, as
// the leader computed it from the job's committed Through (CronDue). Apply
// makes one run for it, or records why not; a CronFire for a time the job
// has already decided changes nothing, so however often a firing is
// proposed it runs once. Missed lists earlier times of the schedule that
// passed while no leader could fire them (up to MaxCronMissed; MissedMore
// counts the rest); Skip says that Scheduled itself was missed and the
// job's catchup=none records it instead of running it. At is the
// leader's clock when it proposed the firing. Since command level 30.
type CronFire struct {
	At         time.Time   `json:"at"`
	JobID      uint64      `json:"job_id"`
	Scheduled  time.Time   `json:"scheduled"`
	Missed     []time.Time `json:"missed,omitempty"`
	MissedMore int         `json:"missed_more,omitempty"`
	Skip       bool        `json:"skip,omitempty"`
}

// Session event kinds (SessionEvent.Kind).
const (
	SessionOpened   = "opened"
	SessionAttached = "attached"
	SessionClosed   = "closed"
)

// SessionEvent records that user By opened, attached to (took back) or
// closed the interactive session of attempt Attempt of instance Instance
// of job JobID on Machine (package client/session); Shell is set for a
// netmgr shell's session. The server that relays the session proposes it,
// having verified By, and only once every server applies command level
// 41; applying it changes nothing but the event ring. It is proposed with
// IgnoreUnknownFlag, so an older replica skips it.
type SessionEvent struct {
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"`
	By       string    `json:"by"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	Shell    bool      `json:"shell,omitempty"`
}
