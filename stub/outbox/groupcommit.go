package outbox

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommitter runs write transactions on a bolt file so that concurrent
// writers share one commit and its fsync, without bolt Batch's wait: a
// lone caller commits at once, and calls arriving while a commit is on
// its way to disk all go into the next one. A start's CHILD_REGISTER is on
// the path from submit to running, so the 2 ms Batch spent waiting for
// company was a tenth of that path.
type groupCommitter struct {
	db *bolt.DB

	mu      sync.Mutex // guards pending and busy
	pending []*groupCall
	busy    bool // a caller is committing the pending calls
}

// groupCall is one caller's transaction function and where its result goes.
type groupCall struct {
	fn  func(*bolt.Tx) error
	err chan error // buffered; receives fn's outcome once
}

// update runs fn in a write transaction, perhaps shared with concurrent
// callers, and returns once it is committed. As with bolt's Batch, fn may
// run more than once (when another call in its transaction fails), so it
// must only write through tx.
func (g *groupCommitter) update(fn func(*bolt.Tx) error) error {
	c := &groupCall{fn: fn, err: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if g.busy {
		g.mu.Unlock()
		return <-c.err
	}
	g.busy = true
	g.mu.Unlock()
	// This caller commits until nothing is pending: its own call first,
	// then whatever arrived meanwhile.
	for {
		g.mu.Lock()
		calls := g.pending
		g.pending = nil
		if len(calls) == 0 {
			g.busy = false
			g.mu.Unlock()
			return <-c.err
		}
		g.mu.Unlock()
		g.commit(calls)
	}
}

// commit runs calls in one transaction. If it fails, each call is run in
// a transaction of its own, so that one call's error fails only that call.
func (g *groupCommitter) commit(calls []*groupCall) {
	err := g.db.Update(func(tx *bolt.Tx) error {
		for _, c := range calls {
			if err := c.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(calls) == 1 {
		for _, c := range calls {
			c.err <- err
		}
		return
	}
	for _, c := range calls {
		c.err <- g.db.Update(c.fn)
	}
}
