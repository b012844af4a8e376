package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// TestCommitNudge checks that the leader appends a barrier after its last
// write when no entry followed it, and none when one did (that entry
// carried the commit) or when nothing was written.
func TestCommitNudge(t *testing.T) {
	var last atomic.Uint64 // Raft's last index
	var barriers atomic.Int32
	n := newCommitNudge(last.Load, func() error {
		barriers.Add(1)
		last.Add(1) // the barrier is an entry too
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.run(ctx)
	}()
	defer func() { cancel(); <-done }()

	testwait.Holds(t, 5*nudgeAfter, "no barrier without a write", func() bool { return barriers.Load() == 0 })
	last.Store(5)
	n.applied(5)
	testwait.For(t, 10*time.Second, "a barrier after the last write", func() bool { return barriers.Load() == 1 })
	testwait.Holds(t, 5*nudgeAfter, "one barrier, not one per tick", func() bool { return barriers.Load() == 1 })

	last.Store(9) // entries 7-9 came after write 7: they carry its commit
	n.applied(7)
	testwait.Holds(t, 5*nudgeAfter, "no barrier when later entries followed the write", func() bool { return barriers.Load() == 1 })
	n.applied(9)
	testwait.For(t, 10*time.Second, "a barrier after the newest write", func() bool { return barriers.Load() == 2 })
}
