package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/time/rate"

	"github.com/netmgr/netmgr/server/lease"
)

// leaseHold is how long a server that knows of no leader holds a plain
// lease renewal for one, before it answers 503. When a leader dies, every
// stub's renewal fails at once and is retried (client.LeaseRetryWait),
// each time to every server left: at 10,000 machines some 10,000
// requests a second answered "no leader", and on 2 cores the survivors'
// Raft votes waited behind them past the election timeout, election after
// election. Held, a renewal waits out up to 0.8 s of an election instead
// of asking again, as Consul's servers hold an RPC up to 7 s for a
// leader (at 10,000 machines on 2 cores that was not enough: the
// survivors still starved, doc/benchmark.md). Shorter than the
// shortest renewal round (1 s: client.LeaseRound), so the stub hears the
// 503 and does not give up on the server first.
const leaseHold = 800 * time.Millisecond

// The pace at which a server lets go of the renewals it held once a
// leader is known (releaseHeld): leaseReleaseShare of the pool's renewal
// rate (its machines over lease.TimingFor's interval), at least
// leaseReleaseFloor a second, in bursts of a twentieth of a second's.
// Let go at once, the renewals a follower held through an election were
// forwarded to the new leader in one burst: at 2,000 machines on this box
// the follower's Raft goroutines waited behind ~1,000 proxied requests
// and the new leader, unanswered for 500 ms, stepped down before its
// first lease check, election after election (doc/benchmark.md). Parked
// on the limiter's timer a held request takes no CPU, and a stub whose
// round ends first renews again later, on its own jittered pace.
const (
	leaseReleaseShare = 0.5
	leaseReleaseFloor = 100
)

// leaderNews wakes the requests a server holds for a leader: Raft's
// leader observations and this server's leadership taking office or
// leaving it each close the channel waiters hold, and a new one replaces
// it. Safe for concurrent use.
type leaderNews struct {
	mu sync.Mutex // guards ch
	ch chan struct{}
}

func newLeaderNews() *leaderNews { return &leaderNews{ch: make(chan struct{})} }

// next returns a channel closed by the next change.
func (n *leaderNews) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// changed wakes every waiter.
func (n *leaderNews) changed() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}

// observer reports Raft's leader observations as news. Its filter does
// the work and drops every observation, so Raft never blocks on it.
func (n *leaderNews) observer() *raft.Observer {
	return raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if _, ok := o.Data.(raft.LeaderObservation); ok {
			n.changed()
		}
		return false
	})
}

// leaseWrite is leaderWrite for plain lease renewals, which a server that
// knows of no leader holds for up to leaseHold (leaseHold says why).
func (s *Server) leaseWrite(h http.HandlerFunc) http.HandlerFunc {
	write := s.leaderWrite(h)
	return func(w http.ResponseWriter, r *http.Request) {
		if s.awaitLeader(r.Context(), leaseHold) {
			s.releaseHeld(r.Context())
		}
		write(w, r)
	}
}

// awaitLeader returns once this server leads with its leadership in office
// (s.leader), or knows another leader to forward to, or after hold, or
// when ctx ends, whichever comes first. It reports whether it held the
// request and then found a leader.
func (s *Server) awaitLeader(ctx context.Context, hold time.Duration) bool {
	var timer *time.Timer
	for {
		news := s.news.next()
		if s.leaderKnown() {
			return timer != nil
		}
		if timer == nil {
			s.leaseHeld.Add(1)
			defer s.leaseHeld.Add(-1)
			timer = time.NewTimer(hold)
			defer timer.Stop()
		}
		select {
		case <-news:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// releaseHeld waits for a held renewal's turn to go on, at the pace
// leaseReleaseShare sets, or until ctx ends.
func (s *Server) releaseHeld(ctx context.Context) {
	pool := s.book.Pool().Size()
	limit := rate.Limit(max(leaseReleaseShare*float64(pool)/lease.TimingFor(pool).Renew.Seconds(), leaseReleaseFloor))
	if s.leaseRelease.Limit() != limit {
		s.leaseRelease.SetLimit(limit)
		s.leaseRelease.SetBurst(max(1, int(limit/20)))
	}
	_ = s.leaseRelease.Wait(ctx)
}

// leaderKnown reports whether a write here would reach a leader now: this
// server leads and its leadership took office, or Raft names another.
func (s *Server) leaderKnown() bool {
	if s.raft.State() == raft.Leader {
		return s.leader.Load() != nil
	}
	_, id := s.raft.LeaderWithID()
	return id != "" && string(id) != s.cfg.Name
}
