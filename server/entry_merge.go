package server

import (
	"fmt"
	"sync"

	"github.com/netmgr/netmgr/fsm"
)

const (
	// entriesInFlight bounds the batch entries of one kind (ChildEvents,
	// Submits) the leader has proposed and not yet seen committed. Items
	// that arrive while it is reached wait for an entry to commit and go
	// together in the next, so that under load the small batches of many
	// requests share entries; an item that finds fewer in flight is
	// proposed at once.
	entriesInFlight = 2
	// entryMaxItems bounds the items merged into one entry (one caller's
	// larger batch still goes whole).
	entryMaxItems = 1024
)

// entryMerger merges the items (CHILD events, submitted jobs) that
// concurrent callers commit into batch entries, at most entriesInFlight
// at a time. The zero value is ready for use.
type entryMerger[T any] struct {
	mu      sync.Mutex // guards queue and running
	queue   []*mergeCall[T]
	running int // callers proposing an entry now
}

// mergeCall is one caller's items and, once done is closed, their results.
type mergeCall[T any] struct {
	items   []T
	results []*fsm.Result
	err     error
	done    chan struct{}
}

// commit commits items, in order and without items of other callers in
// between, through propose, which commits a batch as one entry and returns
// each item's result; commit returns those of the caller's items. The
// caller may find itself proposing other callers' items too.
func (m *entryMerger[T]) commit(items []T, propose func([]T) ([]*fsm.Result, error)) ([]*fsm.Result, error) {
	call := &mergeCall[T]{items: items, done: make(chan struct{})}
	m.mu.Lock()
	m.queue = append(m.queue, call)
	for m.running < entriesInFlight && len(m.queue) > 0 {
		m.running++
		calls := m.takeLocked()
		m.mu.Unlock()
		proposeMerged(calls, propose)
		m.mu.Lock()
		m.running--
	}
	m.mu.Unlock()
	<-call.done
	return call.results, call.err
}

// takeLocked removes from the queue the calls of the next entry: the
// first, and those after it while the entry stays within entryMaxItems.
// The caller holds m.mu.
func (m *entryMerger[T]) takeLocked() []*mergeCall[T] {
	n, items := 1, len(m.queue[0].items)
	for n < len(m.queue) && items+len(m.queue[n].items) <= entryMaxItems {
		items += len(m.queue[n].items)
		n++
	}
	calls := m.queue[:n:n]
	m.queue = m.queue[n:]
	return calls
}

// proposeMerged commits the items of calls as one entry and hands each
// call its share of the results, or the entry's error.
func proposeMerged[T any](calls []*mergeCall[T], propose func([]T) ([]*fsm.Result, error)) {
	var merged []T
	for _, call := range calls {
		merged = append(merged, call.items...)
	}
	results, err := propose(merged)
	off := 0
	for _, call := range calls {
		if err != nil {
			call.err = err
		} else {
			call.results = results[off : off+len(call.items)]
			off += len(call.items)
		}
		close(call.done)
	}
}

// batchResults returns the per-item results of a batch entry of type t
// holding n items.
func batchResults(t fsm.MessageType, res *fsm.Result, err error, n int) ([]*fsm.Result, error) {
	if err != nil {
		return nil, err
	}
	if len(res.Events) != n {
		return nil, fmt.Errorf("apply %v: %d results for %d items", t, len(res.Events), n)
	}
	return res.Events, nil
}
