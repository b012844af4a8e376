package server

import (
	"context"
	"sync/atomic"
	"time"
)

// nudgeAfter is how long the leader waits, after a write of its own was
// applied, for a later entry to carry the commit index to the followers
// before it appends a barrier to do so.
const nudgeAfter = 10 * time.Millisecond

// commitNudge tells the followers the commit index of the leader's last
// write soon after it was applied, so that they apply it too (a
// follower's history, event streams and ?stale reads show it) without
// Raft's CommitTimeout ticking at rest.
//
// A follower learns the commit index only from the leader's next append:
// a new entry, or, with no new entry, the empty append hashicorp/raft
// sends each CommitTimeout (50 ms by default). Those empty appends, two
// round trips a CommitTimeout per follower, were a third of an idle
// leader's CPU (issue 36), so raftnode sets CommitTimeout to a second
// and the leader nudges instead: nudgeAfter after a write it applied, if
// no entry came after it (an entry that did carries the commit, and
// nudges in its turn), it appends a Raft barrier, an entry the FSM never
// sees, whose append carries the commit index. A busy leader appends
// none, and an idle one sends nothing but Raft's heartbeats.
type commitNudge struct {
	last atomic.Uint64 // index of the newest write applied
	kick chan struct{} // cap 1
	// lastIndex and barrier are Raft's LastIndex and Barrier.
	lastIndex func() uint64
	barrier   func() error
}

// newCommitNudge returns a nudge over Raft's LastIndex and Barrier.
func newCommitNudge(lastIndex func() uint64, barrier func() error) *commitNudge {
	return &commitNudge{kick: make(chan struct{}, 1), lastIndex: lastIndex, barrier: barrier}
}

// applied records that the write at index was applied; it never blocks.
func (n *commitNudge) applied(index uint64) {
	for {
		cur := n.last.Load()
		if index <= cur || n.last.CompareAndSwap(cur, index) {
			break
		}
	}
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// run nudges until ctx ends.
func (n *commitNudge) run(ctx context.Context) {
	t := time.NewTimer(nudgeAfter)
	t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		t.Reset(nudgeAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if n.lastIndex() <= n.last.Load() {
			_ = n.barrier() // best effort: CommitTimeout is the backstop
		}
	}
}
