package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/netmgr/netmgr/server/lease"
)

// The lease timing. A stub's lease holds for LeaseDuration from the moment
// it sent the renewal the leader granted; it renews every
// LeaseRenewInterval and stops the attempts of restartable jobs when its
// lease runs out. The leader declares a lease expired only LeaseDuration +
// leaseMargin after the last renewal it received (and a new leader counts
// every lease as renewed at its election), and only then starts those jobs
// elsewhere. Since a renewal is received after it was sent, the stub has
// stopped its copies at least leaseMargin before any replacement can be
// placed, whatever the clocks read: only their rates are assumed to agree
// within a few percent. A renewal is granted only after a Raft leadership
// check that began after it arrived, so a deposed leader cannot extend a
// lease. The lease outlasts an election (about 0.5-1.5 s with our Raft
// timeouts) with margin, so an election does not stop jobs.
const (
	LeaseDuration      = lease.Duration
	LeaseRenewInterval = lease.Renew
	leaseMargin        = lease.Margin
)

// The outage grace (Config.OutageGrace). An hour outlasts a coordinated
// upgrade of the server group, a storage array's or hypervisor's hiccup
// and most power cuts of a server room, while a machine that died while
// fewer than half the pool renewed (a rack's power) still has its
// restartable work started elsewhere the same hour. MaxOutageGrace bounds
// the setting: a leader that does not know which grace an earlier one
// told a silent stub assumes this one.
const (
	DefaultOutageGrace = time.Hour
	MaxOutageGrace     = lease.MaxOutageGrace
)

// checkGather is how long a leadership check waits, once a renewal asks
// for one, for more to ask before its round begins: every renewal that
// arrived before the round began shares it, so at 20,000 renewals a
// second the leader runs at most some 1/checkGather rounds (each one
// heartbeat to every follower) instead of one per round trip. A renewal
// waits at most this much longer; its lease counts from when the stub
// sent it, so the wait shortens nothing.
//
// At 3,300 renewals a second (2,000 machines and more) a round every
// 5 ms plus its round trip was some 125 rounds a second, each an
// AppendEntries to every follower: three times Raft's own heartbeats.
// At 20 ms it is some 45.
const checkGather = 20 * time.Millisecond

// leaderCheck confirms leadership with Raft's VerifyLeader, one round at a
// time, shared by every request waiting for a check begun after it
// arrived: a burst of renewals costs one round of heartbeats.
type leaderCheck struct {
	verify func() error  // one round: Raft's VerifyLeader
	kick   chan struct{} // cap 1: a waiter wants a new round
	gather time.Duration // checkGather; 0 in tests that want rounds at once

	mu       sync.Mutex // guards verified and changed
	verified time.Time  // start of the last round that confirmed leadership
	changed  chan struct{}
}

// newLeaderCheck runs its rounds with verify, which confirms leadership
// or fails.
func newLeaderCheck(verify func() error) *leaderCheck {
	return &leaderCheck{verify: verify, kick: make(chan struct{}, 1), gather: checkGather, changed: make(chan struct{})}
}

// run serves rounds until ctx ends.
func (c *leaderCheck) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		if c.gather > 0 {
			t := time.NewTimer(c.gather)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		start := time.Now()
		err := c.verify()
		c.mu.Lock()
		if err == nil {
			c.verified = start
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

// since waits until leadership has been confirmed by a round that began
// at or after t, for at most within. It bounds the wait with a timer, not
// a context of its own: a context derived from the server's registers
// with it under a lock, thousands of times a second at the leader.
func (c *leaderCheck) since(ctx context.Context, t time.Time, within time.Duration) error {
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		ok, changed := !c.verified.Before(t), c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case c.kick <- struct{}{}:
		default:
		}
		if timeout == nil {
			tm := time.NewTimer(within)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("confirm leadership: %w", errNotLeader)
		case <-timeout:
			return fmt.Errorf("confirm leadership within %v: %w", within, errNotLeader)
		}
	}
}

// leaderState is what handlers need of the current leadership.
type leaderState struct {
	check  *leaderCheck
	leases *lease.Table
	// facts are the joining stubs' facts their renewals carried; nil in
	// tests that build a leaderState alone.
	facts *joinFacts
	// nudge tells the followers the commit index after the leader's
	// writes (commit_nudge.go); nil in tests that build a leaderState
	// alone.
	nudge *commitNudge
}

// suspects reports whether the leader suspects machine's stub: no
// renewal from it for longer than the lease table's suspicion threshold
// (suspectAfter of the pool).
func (st *leaderState) suspects(machine string, now time.Time) bool {
	return st.leases.Silence(machine, now) > st.leases.SuspectAfter()
}
