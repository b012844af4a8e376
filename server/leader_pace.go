package server

import "time"

// reconcileGap is the least time between two passes of the leader's
// reconcile duties (membership, lease expiry and the rest run on gossip
// events and every leaderTick). While a large pool joins, gossip reports
// a change for nearly every member it hears of, and each full membership
// pass copies the pool and looks at every machine: at 2,000 machines
// joining 25 a second, a sixth of the leader's CPU. Spaced, a join or a
// leave waits at most this long more to be seen.
const reconcileGap = 100 * time.Millisecond

// A full membership pass looks at every machine, and so does the lease
// expiry that rides on it: past 2,000 machines the gap grows with the
// pool, reconcileGapPerMachine a machine up to reconcileGapMax (500 ms at
// 10,000), so that the passes a joining pool calls for cost the leader a
// bounded share of a core whatever its size. Before, at 4,000 machines
// joining, the passes and the expiry were a quarter of the leader's CPU
// (0.15 of 0.63 cores), growing with every machine (doc/benchmark.md).
// Past 5,000 machines, where the gap outgrows leaderTick, the tick's
// passes are paced too. A join or a leave is seen at most the gap later,
// a lease expiry too: within the 10 s issue 36 allows at 10,000.
const (
	reconcileGapPerMachine = 50 * time.Microsecond
	reconcileGapMax        = time.Second
)

// reconcileGapFor is the gap between passes in a pool of machines.
func reconcileGapFor(machines int) time.Duration {
	return min(max(reconcileGap, time.Duration(machines)*reconcileGapPerMachine), reconcileGapMax)
}

// reconcilePace spaces the reconcile passes that gossip events call for:
// an event within reconcileGap of the last pass arms a timer for the rest
// of the gap instead, and the events that come meanwhile ride on it. It is
// the leader loop's alone, not safe for concurrent use.
type reconcilePace struct {
	gap   time.Duration
	last  time.Time // the last pass
	timer *time.Timer
	armed bool
}

// newReconcilePace returns a pace with no pass behind it and its timer
// stopped.
func newReconcilePace(gap time.Duration) *reconcilePace {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &reconcilePace{gap: gap, timer: t}
}

// event reports whether a gossip event at now calls for a pass at once;
// false when the gap holds it back, the timer then armed for its end.
func (p *reconcilePace) event(now time.Time) bool {
	wait := p.gap - now.Sub(p.last)
	if wait <= 0 {
		return true
	}
	if !p.armed {
		p.timer.Reset(wait)
		p.armed = true
	}
	return false
}

// ran records a pass at now.
func (p *reconcilePace) ran(now time.Time) { p.last = now }

// fit sets the gap for a pool of machines (reconcileGapFor).
func (p *reconcilePace) fit(machines int) { p.gap = reconcileGapFor(machines) }

// C receives when an event held back is due.
func (p *reconcilePace) C() <-chan time.Time { return p.timer.C }

// fired records that the timer's value was received.
func (p *reconcilePace) fired() { p.armed = false }

// stop stops the timer.
func (p *reconcilePace) stop() { p.timer.Stop() }
