package fsm

import (
	"slices"
	"time"
)

// AttemptRecord is how one attempt of an instance ended, with the job's
// owner and queue: the accounting record a server keeps outside the
// database (its history). Index is the entry that ended it; ReplacedBy
// is the attempt that took its place, 0 when none did.
type AttemptRecord struct {
	Index       uint64
	Job         uint64
	Name        string
	Owner       string
	Queue       string
	Instance    int
	SubmittedAt time.Time
	AttemptEnd
	ReplacedBy uint64
	// CheckpointSize and CheckpointAt describe the checkpoint the attempt
	// kept (CheckpointKept), zero when it kept none.
	CheckpointSize int64
	CheckpointAt   time.Time
}

// Applied is what one applied entry produced for the record kept outside
// the database: its events and the attempts it ended. A Restored one
// instead says a snapshot at Index replaced the state, so the entries up
// to Index produced nothing here.
type Applied struct {
	Index    uint64
	Restored bool
	Events   []Event
	Attempts []AttemptRecord
}

// Recorder receives, in log order, what every applied entry produced and
// every snapshot restore. It is called after the FSM's lock is released,
// on Raft's apply goroutine: blocking it holds back the applies that
// follow (back-pressure), it never loses anything.
type Recorder func([]Applied)

// SetRecorder makes f hand what every entry produces to rec. Call it
// before Raft starts.
func (f *FSM) SetRecorder(rec Recorder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec = rec
	f.d.out = &outbox{}
}

// outbox gathers what the entry being applied produced; db.out is nil
// when nobody records.
type outbox struct {
	events   []Event
	attempts []AttemptRecord
	ended    []attemptRef // attempts that entered a finished state
	done     []Applied    // the entries applied under this lock
}

// attemptRef names one attempt of one instance.
type attemptRef struct {
	job      uint64
	instance int
	attempt  uint64
}

// noteFinished notes that the current attempt of in ended, for
// flushAttempts to record once the entry is applied.
func (d *db) noteFinished(jobID uint64, in *Instance) {
	if d.out != nil {
		d.out.ended = append(d.out.ended, attemptRef{jobID, in.Index, in.Attempt})
	}
}

// noteReplaced records the current attempt of in, about to be replaced by
// a new one.
func (d *db) noteReplaced(j *Job, in *Instance, end AttemptEnd, index uint64) {
	if d.out != nil {
		d.out.attempts = append(d.out.attempts, attemptRecord(j, in, end, index, end.Attempt+1))
	}
}

func attemptRecord(j *Job, in *Instance, end AttemptEnd, index, replacedBy uint64) AttemptRecord {
	r := AttemptRecord{Index: index, Job: j.ID, Name: j.Name, Owner: j.Owner, Queue: j.Queue,
		Instance: in.Index, SubmittedAt: j.SubmittedAt, AttemptEnd: end, ReplacedBy: replacedBy}
	if c := in.Checkpoint; c != nil && c.Attempt == end.Attempt {
		r.CheckpointSize, r.CheckpointAt = c.Size, c.At
	}
	return r
}

// flushRecord closes the entry at index: the attempts that ended and are
// still finished after it are recorded, and what the entry produced joins
// the ones to hand to the recorder.
func (d *db) flushRecord(index uint64) {
	o := d.out
	if o == nil {
		return
	}
	for i, r := range o.ended {
		if slices.Contains(o.ended[:i], r) {
			continue
		}
		j := d.jobs[r.job]
		if j == nil || r.instance >= len(j.Instances) {
			continue
		}
		in := &j.Instances[r.instance]
		if in.Attempt != r.attempt || !in.Finished() {
			continue // restarted within the entry: noteReplaced recorded it
		}
		o.attempts = append(o.attempts, attemptRecord(j, in, currentEnd(in), index, 0))
	}
	if len(o.events) > 0 || len(o.attempts) > 0 {
		o.done = append(o.done, Applied{Index: index, Events: o.events, Attempts: o.attempts})
	}
	o.events, o.attempts, o.ended = nil, nil, o.ended[:0]
}

// currentEnd is how the current attempt of in ended.
func currentEnd(in *Instance) AttemptEnd {
	return AttemptEnd{
		Attempt: in.Attempt, Machine: in.Machine, Key: in.Key, State: in.State, ExitCode: in.ExitCode,
		Signal: in.Signal, Error: in.Error, Reason: in.Reason, UserMS: in.UserMS, SysMS: in.SysMS,
		MaxRSSKB: in.MaxRSSKB, PlacedAt: in.PlacedAt, StartedAt: in.StartedAt, EndedAt: in.EndedAt,
	}
}

// takeRecord returns and forgets what the entries applied so far
// produced, ending with one for the last entry applied (empty if it
// produced nothing), so that the recorder always learns how far the state
// has come.
func (d *db) takeRecord() []Applied {
	if d.out == nil {
		return nil
	}
	out := d.out.done
	d.out.done = nil
	if len(out) == 0 || out[len(out)-1].Index < d.index {
		out = append(out, Applied{Index: d.index})
	}
	return out
}

// record hands out to the recorder, if any. Call it without f.mu held.
func (f *FSM) record(out []Applied) {
	if f.rec != nil && len(out) > 0 {
		f.rec(out)
	}
}
