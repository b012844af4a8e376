package fsm

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Result is what Apply returns for every command (raft hands it back
// through ApplyFuture.Response). Err holds a rule violation; the state is
// unchanged by a command that returns one.
type Result struct {
	Index uint64
	// JobID is the job a Submit created, or found by its idempotency key.
	JobID uint64
	// Existing is true when a Submit matched an earlier idempotency key.
	Existing bool
	// Accepted are the assignments of a Place that passed the re-check;
	// Dropped counts the others.
	Accepted []Assignment
	Dropped  int
	// Stale is true when a CHILD event named an attempt that is no longer
	// current: it was counted and changed nothing else.
	Stale bool
	// Signaled and Dequeued count what a Kill affected.
	Signaled int
	Dequeued int
	// Draining names the machines a LoadDatabase drained.
	Draining []string
	// ReservationID is the reservation a Reserve made; Ended the ones an
	// Unreserve ended.
	ReservationID uint64
	Ended         []uint64
	// Affected counts the instances a Suspend, Resume or RestartJob changed.
	Affected int
	// Events holds a batch's result for each of its items (the events of
	// a ChildEvents, the jobs of a Submits), in order; each has this
	// entry's Index.
	Events []*Result
	Err    error
}

// FSM is the raft.FSM holding the database. Apply, Snapshot and Restore are
// called by Raft; Read and Watch by everyone else. Safe for concurrent use.
type FSM struct {
	// write is held, before mu, by whatever changes the records (Apply,
	// and a snapshot starting or ending its capture), and by Persist while
	// it encodes a chunk of jobs: Persist reads the records without mu,
	// so an Apply waiting for a chunk holds no lock a read waits for.
	write sync.Mutex
	mu    sync.RWMutex // guards d and watch
	d     *db
	watch chan struct{}   // closed and replaced after every Apply and Restore
	rec   Recorder        // set once before Raft starts; nil: nobody records
	obs   MachineObserver // nil: nobody observes (observe.go)
	// applied mirrors d.index for readers that take no lock
	// (AppliedIndex).
	applied atomic.Uint64
	// persistHook, when set (by tests), is called by Persist between two
	// chunks of jobs, without the lock, with the jobs written so far;
	// persistChunk, when positive, replaces persistChunkJobs.
	persistHook  func(jobs int)
	persistChunk int
	// chunkHook, when set (by tests), is called by Persist while it holds
	// write in the middle of a chunk.
	chunkHook func()
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New returns an empty database.
func New() *FSM {
	return &FSM{d: newDB(), watch: make(chan struct{})}
}

// Read calls fn with a consistent view of the database under a read lock.
// fn must not block or call back into the FSM.
func (f *FSM) Read(fn func(View)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(View{d: f.d})
}

// Watch returns the applied index and a channel closed by the next change.
func (f *FSM) Watch() (uint64, <-chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.d.index, f.watch
}

// Apply applies one log entry. A command that cannot be decoded panics:
// a replica must stop rather than diverge.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return &Result{Index: l.Index}
	}
	res, out := f.applyOne(l)
	f.record(out)
	return res
}

// applyOne applies l under the lock and returns, with the result, what it
// produced for the recorder.
func (f *FSM) applyOne(l *raft.Log) (*Result, []Applied) {
	f.write.Lock()
	defer f.write.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	res := f.apply(l.Index, l.Data)
	f.d.index = l.Index
	f.applied.Store(l.Index)
	f.tellObserver()
	close(f.watch)
	f.watch = make(chan struct{})
	return res, f.d.takeRecord()
}

// ApplyBatch applies a batch of log entries, in order, as Apply would one
// by one, but under one lock and with one wake-up of the watchers: the
// leader passes that follow a commit then see the whole batch at once.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var rec []Applied
	defer func() { f.record(rec) }() // after the unlock below
	f.write.Lock()
	defer f.write.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	applied := false
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			out[i] = &Result{Index: l.Index}
			continue
		}
		out[i] = f.apply(l.Index, l.Data)
		f.d.index = l.Index
		applied = true
	}
	if !applied {
		return out
	}
	f.applied.Store(f.d.index)
	f.tellObserver()
	close(f.watch)
	f.watch = make(chan struct{})
	rec = f.d.takeRecord()
	return out
}

// apply applies one entry's command, then decides the jobs held for the
// jobs it ended (flushEnded), then files the mail its changes call for.
func (f *FSM) apply(index uint64, data []byte) *Result {
	res := f.applyCommand(index, data)
	f.d.flushEnded(index)
	f.d.flushMail(index)
	f.d.flushRecord(index)
	return res
}

func (f *FSM) applyCommand(index uint64, data []byte) *Result {
	if len(data) == 0 {
		panic(fmt.Sprintf("fsm: empty log entry at index %d", index))
	}
	t, body := MessageType(data[0]), data[1:]
	ignorable := t&IgnoreUnknownFlag != 0
	t &^= IgnoreUnknownFlag
	d := f.d
	switch t {
	case StubJoinType:
		var c StubJoin
		decode(index, t, body, &c)
		return d.applyStubJoin(index, &c)
	case StubLeaveType:
		var c StubLeave
		decode(index, t, body, &c)
		return d.applyStubLeave(index, &c)
	case SubmitType, SubmitAfterType, SubmitDirType, SubmitCronType, SubmitLimitsType, SubmitGangType, SubmitFilesType, SubmitResourcesType:
		var c Submit
		decode(index, t, body, &c)
		return d.applySubmit(index, &c)
	case PlaceType:
		var c Place
		decode(index, t, body, &c)
		return d.applyPlace(index, &c)
	case ChildRegisterType:
		var c ChildRegister
		decode(index, t, body, &c)
		return d.applyChildRegister(index, &c)
	case ChildTermType:
		var c ChildTerm
		decode(index, t, body, &c)
		return d.applyChildTerm(index, &c)
	case KillType:
		var c Kill
		decode(index, t, body, &c)
		return d.applyKill(index, &c)
	case LoadDatabaseType:
		var c LoadDatabase
		decode(index, t, body, &c)
		return d.applyLoadDatabase(index, &c)
	case SetQueueType:
		var c SetQueue
		decode(index, t, body, &c)
		return d.applySetQueue(index, &c)
	case RemoveQueueType:
		var c RemoveQueue
		decode(index, t, body, &c)
		return d.applyRemoveQueue(index, &c)
	case ReserveType:
		var c Reserve
		decode(index, t, body, &c)
		return d.applyReserve(index, &c)
	case UnreserveType:
		var c Unreserve
		decode(index, t, body, &c)
		return d.applyUnreserve(index, &c)
	case SuspendType:
		var c JobControl
		decode(index, t, body, &c)
		return d.applySuspend(index, &c)
	case ResumeType:
		var c JobControl
		decode(index, t, body, &c)
		return d.applyResume(index, &c)
	case RestartJobType:
		var c JobControl
		decode(index, t, body, &c)
		return d.applyRestartJob(index, &c)
	case LeaseExpiredType:
		var c LeaseExpired
		decode(index, t, body, &c)
		return d.applyLeaseExpired(index, &c)
	case LeaseRestoredType:
		var c LeaseRestored
		decode(index, t, body, &c)
		return d.applyLeaseRestored(index, &c)
	case LeaderElectedType:
		var c LeaderElected
		decode(index, t, body, &c)
		return d.applyLeaderElected(index, &c)
	case ChildEventsType:
		var c ChildEvents
		decode(index, t, body, &c)
		return d.applyChildEvents(index, &c)
	case SubmitPlaceType:
		var c SubmitPlace
		decode(index, t, body, &c)
		return d.applySubmitPlace(index, &c)
	case SubmitsType:
		var c Submits
		decode(index, t, body, &c)
		return d.applySubmits(index, &c)
	case MachineHealthType:
		var c MachineHealth
		decode(index, t, body, &c)
		return d.applyMachineHealth(index, &c)
	case TokenIssueType:
		var c TokenIssue
		decode(index, t, body, &c)
		return d.applyTokenIssue(index, &c)
	case TokenRevokeType:
		var c TokenRevoke
		decode(index, t, body, &c)
		return d.applyTokenRevoke(index, &c)
	case ServerRemovedType:
		var c ServerRemoved
		decode(index, t, body, &c)
		return d.applyServerRemoved(index, &c)
	case MachineAsleepType:
		var c MachineAsleep
		decode(index, t, body, &c)
		return d.applyMachineAsleep(index, &c)
	case CronFireType:
		var c CronFire
		decode(index, t, body, &c)
		return d.applyCronFire(index, &c)
	case MailSentType:
		var c MailSent
		decode(index, t, body, &c)
		return d.applyMailSent(index, &c)
	case StubRestartingType:
		var c StubRestarting
		decode(index, t, body, &c)
		return d.applyStubRestarting(index, &c)
	case OutputsKeptType:
		var c OutputsKept
		decode(index, t, body, &c)
		return d.applyOutputsKept(index, &c)
	case CheckpointKeptType:
		var c CheckpointKept
		decode(index, t, body, &c)
		return d.applyCheckpointKept(index, &c)
	case JobsExpireType:
		var c JobsExpire
		decode(index, t, body, &c)
		return d.applyJobsExpire(index, &c)
	case FairShareStartType:
		var c FairShareStart
		decode(index, t, body, &c)
		return d.applyFairShareStart(index, &c)
	case SessionEventType:
		var c SessionEvent
		decode(index, t, body, &c)
		return d.applySessionEvent(index, &c)
	case PrimeTimeSwitchType:
		var c PrimeTimeSwitch
		decode(index, t, body, &c)
		return d.applyPrimeTimeSwitch(index, &c)
	case PreemptType:
		var c Preempt
		decode(index, t, body, &c)
		return d.applyPreempt(index, &c)
	case PolicyLoadType:
		var c PolicyLoad
		decode(index, t, body, &c)
		return d.applyPolicyLoad(index, &c)
	}
	if ignorable {
		return &Result{Index: index}
	}
	panic(fmt.Sprintf("fsm: unknown command type %d at index %d", uint8(t), index))
}

func decode(index uint64, t MessageType, body []byte, v any) {
	if err := json.Unmarshal(body, v); err != nil {
		panic(fmt.Sprintf("fsm: decode %v at index %d: %v", t, index, err))
	}
}
