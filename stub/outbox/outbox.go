package outbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/boltcheck"
	bolt "go.etcd.io/bbolt"
)

var (
	// eventsBucket holds the undelivered events: key = big-endian sequence
	// number, value = JSON client.ChildEvent.
	eventsBucket = []byte("events")
	// attemptsBucket records every attempt this DataDir ever started, so a
	// repeated Start after a restart starts nothing: key = attemptKeyBytes,
	// value = JSON Record.
	attemptsBucket = []byte("attempts")
)

// ErrClosed means the outbox was closed by Shutdown.
var ErrClosed = errors.New("outbox is closed")

// Record is what the outbox keeps about a started attempt.
type Record struct {
	PID int       `json:"pid,omitempty"`
	At  time.Time `json:"at"`
	// Restartable is set for a job with a restart policy, which the stub
	// stops when its lease runs out.
	Restartable bool `json:"restartable,omitempty"`
	// OwnerPolicy is the job's queue's desktop policy
	// (StartRequest.OwnerPolicy), kept so that a later stub treats the
	// attempt as its queue says.
	OwnerPolicy map[string]string `json:"owner_policy,omitempty"`
	// Ended is set once the attempt's CHILD_TERM is recorded: a later stub
	// has nothing more to report about it.
	Ended bool `json:"ended,omitempty"`
	// RegisterAnswered is set when the attempt's CHILD_REGISTER went in
	// the answer to its Start rather than in the outbox: its CHILD_TERM is
	// then recorded after a copy of it.
	RegisterAnswered bool `json:"register_answered,omitempty"`
	// ExecDir is the attempt's exec dir, which this stub made (never one
	// it found there already); empty for none, and in records of stubs
	// that predate it, whose directories are never removed.
	ExecDir string `json:"exec_dir,omitempty"`
	// EndedAt is when the stub recorded the attempt's end, by its clock;
	// ExecDir is removed the exec retention after it (execdirs.go).
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Removed is set once ExecDir is removed.
	Removed bool `json:"removed,omitempty"`
	// JobName and Owner are the Start's, for the epilogue's environment;
	// empty in records of stubs that predate them.
	JobName string `json:"job_name,omitempty"`
	Owner   string `json:"owner,omitempty"`
	// CopyOut and CopyOutMax are the Start's: the files taken from
	// ExecDir when the attempt ends, before its end is recorded
	// (files.go).
	CopyOut    []string `json:"copy_out,omitempty"`
	CopyOutMax int64    `json:"copy_out_max,omitempty"`
	// Checkpoint, CheckpointExit, CheckpointSignal and GraceMS are the
	// Start's: the paths kept when the attempt exits with CheckpointExit,
	// before its end is recorded, and the signal and grace that ask it
	// to checkpoint before the owner policy stops it (checkpoints.go).
	Checkpoint       []string `json:"checkpoint,omitempty"`
	CheckpointExit   int      `json:"checkpoint_exit,omitempty"`
	CheckpointSignal string   `json:"checkpoint_signal,omitempty"`
	GraceMS          int64    `json:"grace_ms,omitempty"`
}

// Entry is one undelivered event and its sequence number.
type Entry struct {
	Seq uint64
	Ev  client.ChildEvent
}

// outbox is the durable queue of child events, a bbolt file. It is safe for
// concurrent use; concurrent writes share one transaction (groupCommitter).
type Outbox struct {
	attempts string        // the supervisors' directory, for the damage advice
	wake     chan struct{} // cap 1; signalled after every append
	writes   groupCommitter
	// recorded stamps each event as it is recorded, for the metrics.
	recorded recordTimes
	// unsent holds the events bucket's events decoded, for the sender.
	unsent unsentEvents
	// answered holds the events a server answered whose removal from the
	// file is not written yet (see remove).
	answered answeredEvents

	mu     sync.RWMutex // guards db against use after close, and closed
	db     *bolt.DB
	closed bool
}

// outboxAdvice is how to bring back a stub whose outbox is damaged: the
// attempts' supervisor directories still say what runs and how what ended
// ended, and a stub with no record of them adopts them (runner.recover).
const outboxAdvice = "move it aside (mv %[1]s %[1]s.damaged) and start the stub again: " +
	"it finds the running jobs and the recorded ends of the others in %[2]s"

// damaged is the error for the outbox at path found damaged: err, which
// names the file and what is wrong, and how to recover from the
// supervisors' directory attempts.
func damaged(path, attempts string, err error) error {
	return fmt.Errorf("%w: %s", err, fmt.Sprintf(outboxAdvice, path, attempts))
}

// Open opens the outbox file at path, making it if need be. A damaged
// file (boltcheck) is an error that names it and says how to recover
// from attempts, the supervisors' directory, never a panic from inside
// bbolt.
func Open(path, attempts string) (*Outbox, error) {
	bad := func(err error) error { return damaged(path, attempts, err) }
	err := boltcheck.Check(path)
	switch {
	case errors.Is(err, boltcheck.ErrInUse):
		return nil, fmt.Errorf("outbox %s is in use by another process: is another stub running with this --data-dir?", path)
	case err != nil:
		return nil, bad(err)
	}
	// Events come and go all the time, so the free-page list is large:
	// bbolt rebuilds it at open rather than writing it with each commit.
	var db *bolt.DB
	err = boltcheck.Protect(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
		return err
	})
	if err != nil {
		return nil, bad(boltcheck.Damaged(path, "corrupt", "bbolt: "+err.Error()))
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{eventsBucket, attemptsBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open outbox %s: %w", path, err)
	}
	o := &Outbox{db: db, attempts: attempts, wake: make(chan struct{}, 1), writes: groupCommitter{db: db}}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(eventsBucket).ForEach(func(k, v []byte) error {
			var ev client.ChildEvent
			if err := json.Unmarshal(v, &ev); err != nil {
				return fmt.Errorf("decode event %x: %w", k, err)
			}
			o.unsent.add(Entry{Seq: binary.BigEndian.Uint64(k), Ev: ev})
			return nil
		})
	})
	if err != nil {
		_ = db.Close()
		return nil, bad(boltcheck.Damaged(path, "corrupt", err.Error()))
	}
	return o, nil
}

// Record durably appends evs, and when rec is not nil also records the
// attempt k as started, in one transaction. It returns once the events are
// on disk.
func (o *Outbox) Record(k client.AttemptRef, rec *Record, evs ...client.ChildEvent) error {
	vals := make([][]byte, len(evs))
	for i, ev := range evs {
		v, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", ev.Kind, err)
		}
		vals[i] = v
	}
	var recVal []byte
	if rec != nil {
		var err error
		if recVal, err = json.Marshal(rec); err != nil {
			return fmt.Errorf("encode attempt record: %w", err)
		}
	}
	var added []Entry
	gone := o.answered.take()
	err := o.update(func(tx *bolt.Tx) error {
		added = added[:0] // a group commit that failed runs this again alone
		if err := deleteEvents(tx, gone); err != nil {
			return err
		}
		if recVal != nil {
			if err := tx.Bucket(attemptsBucket).Put(attemptKeyBytes(k), recVal); err != nil {
				return err
			}
		}
		b := tx.Bucket(eventsBucket)
		for i, v := range vals {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(seq), v); err != nil {
				return err
			}
			added = append(added, Entry{Seq: seq, Ev: evs[i]})
			o.recorded.put(seq)
		}
		return nil
	})
	if err != nil {
		o.answered.put(gone...)
		return fmt.Errorf("record events of attempt %s: %w", k, err)
	}
	o.unsent.add(added...)
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// Pending returns up to max undelivered events, oldest first, from
// memory: the sender asks after every event recorded and every delivery,
// and reading them back from the file (a transaction, and each event's
// JSON) was a twentieth of a busy stub's CPU.
func (o *Outbox) Pending(max int) ([]Entry, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return nil, fmt.Errorf("read outbox: %w", ErrClosed)
	}
	return o.unsent.first(max), nil
}

// Remove forgets events a server answered. The sender sees them no
// more at once; the file drops them with the next event recorded (in the
// same transaction and fsync) or, when none comes, removeDelay later. A
// removal a crash loses only makes the next stub send the event again,
// which delivery at least once allows: it spares a transaction and an
// fsync per delivery.
func (o *Outbox) Remove(seqs ...uint64) error {
	o.unsent.remove(seqs...)
	if o.answered.put(seqs...) {
		time.AfterFunc(removeDelay, func() { _ = o.flushRemoved() })
	}
	return nil
}

// removeDelay is how long answered events stay in the file when no event
// is recorded after them.
const removeDelay = 200 * time.Millisecond

// flushRemoved writes the pending removals in a transaction of their own.
func (o *Outbox) flushRemoved() error {
	gone := o.answered.take()
	if len(gone) == 0 {
		return nil
	}
	err := o.update(func(tx *bolt.Tx) error { return deleteEvents(tx, gone) })
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			o.answered.put(gone...)
		}
		return fmt.Errorf("remove %d events from outbox: %w", len(gone), err)
	}
	return nil
}

// deleteEvents deletes the events seqs from the events bucket.
func deleteEvents(tx *bolt.Tx, seqs []uint64) error {
	b := tx.Bucket(eventsBucket)
	for _, seq := range seqs {
		if err := b.Delete(seqKey(seq)); err != nil {
			return err
		}
	}
	return nil
}

// Backlog counts the events in the outbox that no server has answered.
func (o *Outbox) Backlog() (int, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return 0, ErrClosed
	}
	return o.unsent.len(), nil
}

// KnownAttempts returns every attempt recorded as started, with its
// record.
func (o *Outbox) KnownAttempts() (map[client.AttemptRef]Record, error) {
	recs := make(map[client.AttemptRef]Record)
	err := o.view(func(tx *bolt.Tx) error {
		return tx.Bucket(attemptsBucket).ForEach(func(k, v []byte) error {
			ak, ok := parseAttemptKeyBytes(k)
			if !ok {
				return fmt.Errorf("bad attempt key %x", k)
			}
			var rec Record
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode attempt record %s: %w", ak, err)
			}
			recs[ak] = rec
			return nil
		})
	})
	if err != nil {
		return nil, damaged(o.db.Path(), o.attempts, boltcheck.Damaged(o.db.Path(), "corrupt", "read known attempts: "+err.Error()))
	}
	return recs, nil
}

// Close writes the pending removals and closes the bolt file; later
// calls fail with ErrClosed.
func (o *Outbox) Close() error {
	_ = o.flushRemoved() // what it misses is sent again by the next stub
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	if err := o.db.Close(); err != nil {
		return fmt.Errorf("close outbox: %w", err)
	}
	return nil
}

// update runs fn in a write transaction shared with concurrent callers.
func (o *Outbox) update(fn func(*bolt.Tx) error) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return ErrClosed
	}
	return o.writes.update(fn)
}

func (o *Outbox) view(fn func(*bolt.Tx) error) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return ErrClosed
	}
	return o.db.View(fn)
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// attemptKeyBytes is the attempts bucket's key of attempt k.
func attemptKeyBytes(k client.AttemptRef) []byte {
	b := binary.BigEndian.AppendUint64(nil, k.JobID)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Instance))
	return binary.BigEndian.AppendUint64(b, k.Attempt)
}

// parseAttemptKeyBytes parses what attemptKeyBytes gives.
func parseAttemptKeyBytes(b []byte) (client.AttemptRef, bool) {
	if len(b) != 24 {
		return client.AttemptRef{}, false
	}
	return client.AttemptRef{
		JobID:    binary.BigEndian.Uint64(b),
		Instance: int(binary.BigEndian.Uint64(b[8:])),
		Attempt:  binary.BigEndian.Uint64(b[16:]),
	}, true
}

// Wake is signalled (capacity 1) after every Record: the sender waits on
// it for work.
func (o *Outbox) Wake() <-chan struct{} { return o.wake }

// HasUnsent reports whether an event of attempt k waits for a server's
// answer.
func (o *Outbox) HasUnsent(k client.AttemptRef) bool { return o.unsent.has(k) }
