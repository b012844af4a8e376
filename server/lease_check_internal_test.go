package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Waiters for a leadership check share rounds: each gets an answer from
// a round begun after it asked, a round that fails confirms nothing, and
// a waiter whose context ends gets errNotLeader.
func TestLeaderCheckRounds(t *testing.T) {
	var rounds atomic.Int32
	var fail atomic.Bool
	c := newLeaderCheck(func() error {
		rounds.Add(1)
		if fail.Load() {
			return errors.New("not leader")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	defer func() { cancel(); <-done }()

	asked := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := c.since(ctx, asked, time.Minute); err != nil {
				t.Errorf("since: %v", err)
			}
		})
	}
	wg.Wait()
	if n := rounds.Load(); n < 1 || n > 20 {
		t.Errorf("20 waiters took %d rounds, want 1 to 20", n)
	}
	if err := c.since(ctx, asked, time.Minute); err != nil || rounds.Load() > 20 {
		t.Errorf("a waiter answered by an earlier round: %v after %d rounds", err, rounds.Load())
	}

	fail.Store(true)
	if err := c.since(ctx, time.Now(), 100*time.Millisecond); !errors.Is(err, errNotLeader) {
		t.Errorf("since with failing rounds: %v, want errNotLeader", err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	wcancel()
	if err := c.since(wctx, time.Now(), time.Minute); !errors.Is(err, errNotLeader) {
		t.Errorf("since with its context ended: %v, want errNotLeader", err)
	}
}

// Renewals that ask one after the other, each after the one before it
// arrived, share the round a gathering check begins once the first asked:
// one heartbeat round for all, each still answered by a round begun after
// it arrived.
func TestLeaderCheckGathers(t *testing.T) {
	var rounds atomic.Int32
	c := newLeaderCheck(func() error { rounds.Add(1); return nil })
	c.gather = time.Second // every waiter below asks well within it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	defer func() { cancel(); <-done }()

	var wg sync.WaitGroup
	for range 20 {
		asked := time.Now()
		wg.Go(func() {
			if err := c.since(ctx, asked, time.Minute); err != nil {
				t.Errorf("since: %v", err)
			}
		})
	}
	wg.Wait()
	if n := rounds.Load(); n != 1 {
		t.Errorf("20 waiters asking one after the other took %d rounds, want 1", n)
	}
}
