package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/boltcheck"
	"github.com/netmgr/netmgr/server/history"
)

// DefaultHistoryRetention is netmgr server's default --history-retention.
const DefaultHistoryRetention = 90 * 24 * time.Hour

// historyFile is this server's history (package history) in its data dir.
const historyFile = "history.db"

// historyQueue is how many batches of applied entries wait for the
// history writer before the FSM's recorder blocks Raft's apply goroutine.
const historyQueue = 1024

// historyWriteMax is how many entries the writer puts in one transaction.
const historyWriteMax = 4096

// historyLinger is how long the writer gathers entries before it writes
// them: one fsync for all, so that the history's disk writes do not
// compete with each of Raft's. Reads wait for the write (historyCaughtUp).
const historyLinger = 100 * time.Millisecond

// historyFeed writes what every applied entry produced (fsm.Recorder) to
// the history file, in the writer goroutine, batching what has queued up.
// A full queue blocks the recorder, so nothing is lost: the apply path
// waits instead.
type historyFeed struct {
	db  *history.DB
	log *slog.Logger
	ch  chan []fsm.Applied // closed by Shutdown once Raft has stopped

	mu    sync.Mutex    // guards watch
	watch chan struct{} // closed and replaced after every write
	// restored is signalled when a restore left a gap to fill.
	restored chan struct{}
}

// openHistory opens the history file in dir.
func openHistory(dir string, log *slog.Logger) (*historyFeed, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, historyFile)
	switch err := boltcheck.Check(path); {
	case errors.Is(err, boltcheck.ErrInUse):
		return nil, fmt.Errorf("%s is in use by another process: is another server running with --data-dir %s?", path, dir)
	case err != nil:
		return nil, fmt.Errorf("%w: %w: move it aside (mv %[3]s %[3]s.damaged) and start the server again: it fetches its history from the other servers", ErrDamagedDataDir, err, path)
	}
	db, err := history.Open(path)
	if err != nil {
		return nil, err
	}
	return &historyFeed{db: db, log: log, ch: make(chan []fsm.Applied, historyQueue),
		watch: make(chan struct{}), restored: make(chan struct{}, 1)}, nil
}

// record is the FSM's recorder: it queues out for the writer, blocking
// while the queue is full.
func (h *historyFeed) record(out []fsm.Applied) { h.ch <- out }

// changed returns a channel closed by the next write.
func (h *historyFeed) changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watch
}

// run writes what arrives, gathered for historyLinger, until the queue is
// closed.
func (h *historyFeed) run() {
	linger := time.NewTimer(historyLinger)
	defer linger.Stop()
	for first := range h.ch {
		batch := first
		linger.Reset(historyLinger)
	more:
		for len(batch) < historyWriteMax {
			select {
			case next, ok := <-h.ch:
				if !ok {
					break more
				}
				batch = append(batch, next...)
			case <-linger.C:
				break more
			}
		}
		h.write(batch)
		h.mu.Lock()
		close(h.watch)
		h.watch = make(chan struct{})
		h.mu.Unlock()
	}
}

// write records batch in order: entries in one transaction up to each
// restore, then the restore.
func (h *historyFeed) write(batch []fsm.Applied) {
	var entries []history.Entry
	flush := func() {
		if len(entries) == 0 {
			return
		}
		if err := h.db.Write(entries); err != nil {
			// The entries stay in the Raft log until a snapshot: a
			// restart applies them again. Say so loudly.
			h.log.Error("history not written", "first", entries[0].Index, "last", entries[len(entries)-1].Index, "err", err)
		}
		entries = entries[:0]
	}
	for _, a := range batch {
		if !a.Restored {
			entries = append(entries, historyEntry(a))
			continue
		}
		flush()
		if err := h.db.Restored(a.Index); err != nil {
			h.log.Error("history restore not noted", "index", a.Index, "err", err)
			continue
		}
		select {
		case h.restored <- struct{}{}:
		default:
		}
	}
	flush()
}

// historyEntry translates what an entry produced for the history file.
func historyEntry(a fsm.Applied) history.Entry {
	e := history.Entry{Index: a.Index, Events: make([]history.Event, len(a.Events)), Attempts: make([]history.Attempt, len(a.Attempts))}
	for i, ev := range a.Events {
		e.Events[i] = history.Event{Index: ev.Index, Seq: i, At: ev.At, Kind: ev.Kind, Job: ev.Job,
			Instance: ev.Instance, Attempt: ev.Attempt, Machine: ev.Machine, Detail: ev.Detail}
	}
	for i, r := range a.Attempts {
		e.Attempts[i] = history.Attempt{Index: r.Index, Job: r.Job, Name: r.Name, Owner: r.Owner, Queue: r.Queue,
			Instance: r.Instance, Attempt: r.Attempt, Machine: r.Machine, State: r.State, ExitCode: r.ExitCode,
			Signal: r.Signal, Error: r.Error, Reason: r.Reason, UserMS: r.UserMS, SysMS: r.SysMS, MaxRSSKB: r.MaxRSSKB,
			SubmittedAt: r.SubmittedAt, PlacedAt: r.PlacedAt, StartedAt: r.StartedAt, EndedAt: r.EndedAt, ReplacedBy: r.ReplacedBy,
			CheckpointSize: r.CheckpointSize, CheckpointAt: r.CheckpointAt}
	}
	return e
}

// eventToWireHistory is a history event in wire form.
func eventToWireHistory(e history.Event) client.Event {
	return client.Event{Index: e.Index, At: e.At, Kind: e.Kind, Job: e.Job, Instance: e.Instance,
		Attempt: e.Attempt, Machine: e.Machine, Detail: e.Detail}
}

// attemptToWire is a history attempt in wire form.
func attemptToWire(a history.Attempt) client.HistoryAttempt {
	return client.HistoryAttempt{Index: a.Index, Job: a.Job, Name: a.Name, Owner: a.Owner, Queue: a.Queue,
		Instance: a.Instance, Attempt: a.Attempt, Machine: a.Machine, State: a.State, ExitCode: a.ExitCode,
		Signal: a.Signal, Error: a.Error, Reason: a.Reason, UserMS: a.UserMS, SysMS: a.SysMS, MaxRSSKB: a.MaxRSSKB,
		SubmittedAt: a.SubmittedAt, PlacedAt: a.PlacedAt, StartedAt: a.StartedAt, EndedAt: a.EndedAt, ReplacedBy: a.ReplacedBy,
		CheckpointSize: a.CheckpointSize, CheckpointAt: a.CheckpointAt}
}

// sweepHistory removes, every sweep period, the history older than the
// retention, until the server stops. Each server sweeps its own copy on
// its own clock: the history is outside the replicated state, so no
// command is needed.
func (s *Server) sweepHistory() {
	r := s.cfg.HistoryRetention
	if r <= 0 {
		return
	}
	every := min(max(r/10, time.Second), time.Hour)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := s.hist.db.Sweep(time.Now().Add(-r)); err != nil {
			s.log.Error("history sweep failed", "err", err)
		} else if n > 0 {
			s.log.Info("history swept", "records", n, "older_than", r)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}
