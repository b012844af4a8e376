package server

import (
	"fmt"
	"sync"

	"github.com/netmgr/netmgr/fsm"
)

const (
	// childEntriesInFlight bounds the ChildEvents entries the leader has
	// proposed and not yet seen committed. CHILD events that arrive while
	// it is reached wait for an entry to commit and go together in the
	// next, so that under load the many small batches of many stubs (and
	// the REGISTERs of many Start answers) share entries; an event that
	// finds fewer in flight is proposed at once.
	childEntriesInFlight = 2
	// childEntryMax bounds the events merged into one entry (one caller's
	// larger batch still goes whole).
	childEntryMax = 1024
)

// childCommitter merges the CHILD events that concurrent callers commit
// into ChildEvents entries, at most childEntriesInFlight at a time. The
// zero value is ready for use.
type childCommitter struct {
	mu      sync.Mutex // guards queue and running
	queue   []*childCall
	running int // callers proposing an entry now
}

// childCall is one caller's events and, once done is closed, their
// results.
type childCall struct {
	batch   []fsm.ChildEvent
	results []*fsm.Result
	err     error
	done    chan struct{}
}

// commit commits batch, in order and without events of other callers in
// between, and returns each event's result. The caller may find itself
// proposing the entries of other callers' events too.
func (c *childCommitter) commit(s *Server, batch []fsm.ChildEvent) ([]*fsm.Result, error) {
	call := &childCall{batch: batch, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, call)
	for c.running < childEntriesInFlight && len(c.queue) > 0 {
		c.running++
		calls := c.takeLocked()
		c.mu.Unlock()
		applyMerged(s, calls)
		c.mu.Lock()
		c.running--
	}
	c.mu.Unlock()
	<-call.done
	return call.results, call.err
}

// takeLocked removes from the queue the calls of the next entry: the
// first, and those after it while the entry stays within childEntryMax
// events. The caller holds c.mu.
func (c *childCommitter) takeLocked() []*childCall {
	n, events := 1, len(c.queue[0].batch)
	for n < len(c.queue) && events+len(c.queue[n].batch) <= childEntryMax {
		events += len(c.queue[n].batch)
		n++
	}
	calls := c.queue[:n:n]
	c.queue = c.queue[n:]
	return calls
}

// applyMerged commits the events of calls as one ChildEvents entry and
// hands each call its share of the results, or the entry's error.
func applyMerged(s *Server, calls []*childCall) {
	var merged fsm.ChildEvents
	for _, call := range calls {
		merged.Events = append(merged.Events, call.batch...)
	}
	res, err := s.apply(fsm.ChildEventsType, merged)
	if err == nil && len(res.Events) != len(merged.Events) {
		err = fmt.Errorf("apply child events: %d results for %d events", len(res.Events), len(merged.Events))
	}
	off := 0
	for _, call := range calls {
		if err != nil {
			call.err = err
		} else {
			call.results = res.Events[off : off+len(call.batch)]
			off += len(call.batch)
		}
		close(call.done)
	}
}
