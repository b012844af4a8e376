package raftnode

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// raftStore is what Raft needs of raft.db: its log and its stable state
// (term and vote). raft-boltdb's BoltStore is both.
type raftStore interface {
	raft.LogStore
	raft.StableStore
}

// watchedStore is the Raft store with each write's outcome recorded in
// Health: a server that cannot write its log (disk full, I/O errors) says
// so in netstatus -s and /metrics instead of only logging each failed
// append. Reads pass through. It is safe for concurrent use, as the store
// it wraps is.
type watchedStore struct {
	raftStore
	health *Health
}

var _ raftStore = (*watchedStore)(nil)

// StoreLog stores one entry and records the outcome.
func (w *watchedStore) StoreLog(l *raft.Log) error {
	return w.health.wrote(w.raftStore.StoreLog(l))
}

// StoreLogs stores entries and records the outcome.
func (w *watchedStore) StoreLogs(ls []*raft.Log) error {
	return w.health.wrote(w.raftStore.StoreLogs(ls))
}

// DeleteRange deletes entries and records the outcome.
func (w *watchedStore) DeleteRange(lo, hi uint64) error {
	return w.health.wrote(w.raftStore.DeleteRange(lo, hi))
}

// Set stores a stable value and records the outcome.
func (w *watchedStore) Set(k, v []byte) error {
	return w.health.wrote(w.raftStore.Set(k, v))
}

// SetUint64 stores a stable value and records the outcome.
func (w *watchedStore) SetUint64(k []byte, v uint64) error {
	return w.health.wrote(w.raftStore.SetUint64(k, v))
}

// Health is the record of the Raft store's writes: whether the last one
// failed, since when writes fail, and, once they succeed again, whether
// the server has caught up with the leader since (the server's lag watch
// says so, with CaughtUp). The zero value is a healthy record. Safe for
// concurrent use.
type Health struct {
	failures atomic.Uint64 // failed writes since the server started
	// unwell is set while failing or recovered is: a good write takes
	// the lock only then.
	unwell atomic.Bool

	mu        sync.Mutex // guards failing, since and recovered
	failing   error      // the last write's error; nil when it succeeded
	since     time.Time  // the first failure of the current run of them
	recovered time.Time  // writes succeed again since; zero once caught up
}

// wrote records the outcome of a write and returns err.
func (h *Health) wrote(err error) error {
	if err == nil {
		if !h.unwell.Load() {
			return nil
		}
		h.mu.Lock()
		if h.failing != nil {
			h.failing, h.recovered = nil, time.Now()
		}
		h.mu.Unlock()
		return nil
	}
	h.failures.Add(1)
	h.mu.Lock()
	if h.failing == nil {
		h.since = time.Now()
	}
	h.failing = err
	h.unwell.Store(true)
	h.mu.Unlock()
	return err
}

// Failures is the number of writes to the Raft store that failed since
// the server started.
func (h *Health) Failures() uint64 { return h.failures.Load() }

// CaughtUp records that the server's log held everything the leader had
// committed as of asOf: writes that succeed again since before then no
// longer make it unhealthy.
func (h *Health) CaughtUp(asOf time.Time) {
	if !h.unwell.Load() {
		return
	}
	h.mu.Lock()
	if !h.recovered.IsZero() && !asOf.Before(h.recovered) {
		h.recovered = time.Time{}
	}
	h.unwell.Store(h.failing != nil || !h.recovered.IsZero())
	h.mu.Unlock()
}

// Kinds of storage problem, as /metrics labels them.
const (
	// ProblemLogWrites: writes to the Raft log fail.
	ProblemLogWrites = "log_write_failing"
	// ProblemCatchingUp: writes work again, and the log has not yet
	// caught up with the leader's commits.
	ProblemCatchingUp = "catching_up"
)

// Problem says what is wrong with the store at now, kind and text, or ""
// and "" when nothing is.
func (h *Health) Problem(now time.Time) (kind, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failing != nil && now.Sub(h.since) < time.Second:
		return ProblemLogWrites, fmt.Sprintf("log write failed: %v", h.failing)
	case h.failing != nil:
		return ProblemLogWrites, fmt.Sprintf("log writes failing for %s: %v", now.Sub(h.since).Round(time.Second), h.failing)
	case !h.recovered.IsZero():
		return ProblemCatchingUp, "log writes work again; catching up with the leader"
	}
	return "", ""
}
