package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The scale suite's placement part (issue 36 point 4), end to end: the
// pool's machines each claim scalePoolSlots slots, and scalePoolQueuedPer
// instances a machine are submitted at once, so that the leader places,
// the simulated stubs take the Starts and answer each with its
// CHILD_REGISTER, and the registrations commit, until every slot runs
// one; the rest stays queued, a backlog that cannot fit.
const (
	// scalePoolSlots is what each simulated machine claims (netmgr sim
	// --slots): the "10,000 machines of 4 slots".
	scalePoolSlots = 4
	// scalePoolQueuedPer is how many instances a machine are submitted:
	// 100,000 for 10,000 machines, as the issue asks.
	scalePoolQueuedPer = 10
	// scalePoolFillWait bounds the wait for every slot to run an instance.
	scalePoolFillWait = 20 * time.Minute
	// scalePoolStuckFor is the window over which the passes of a full
	// pool with a backlog are timed.
	scalePoolStuckFor = 30 * time.Second
	// scalePoolBaseFor is the window, before the submits, over which the
	// leader's CPU at rest is read, to take from its CPU while the pool
	// fills.
	scalePoolBaseFor = 5 * time.Second
	// scalePoolSettleWait bounds the wait for the count of instances
	// holding slots to stay put before the part begins.
	scalePoolSettleWait = time.Minute
	// startedCount is the leader's count of instances started: a Start
	// the stub acknowledged and whose CHILD_REGISTER committed.
	startedCount = "netmgr_server_dispatch_start_latency_seconds_count"
	activeCount  = "netmgr_server_active_instances"
	passCount    = "netmgr_server_scheduler_pass_seconds_count"
	passSum      = "netmgr_server_scheduler_pass_seconds_sum"
)

// poolPlacement is what the placement part measured.
type poolPlacement struct {
	leader string
	// queued is how many instances were submitted, fit how many of them
	// the pool's slots hold.
	queued, fit int
	// submitted is how long the submits took to be accepted; filled how
	// long from the first submit until fit instances were started (0:
	// not within scalePoolFillWait, started then holds how many).
	submitted, filled time.Duration
	started           int
	// sustained is the start rate between a tenth and nine tenths of fit
	// started; best is the best 1 s window.
	sustained, best float64
	// cores is the leader's CPU while the pool filled, restCores over
	// scalePoolBaseFor just before.
	cores, restCores float64
	// stuckPasses is the passes a second, and stuckPassMS the mean pass,
	// of the full pool with the rest queued, over scalePoolStuckFor.
	stuckPasses, stuckPassMS float64
}

// scalePoolPlace submits scalePoolQueuedPer instances for each of the n
// machines of the pool and measures how fast the leader starts them
// until every slot of the live machines (up of n) runs one, and then
// what a pass costs while the rest cannot fit.
func scalePoolPlace(ctx context.Context, g *gossipWatch, n, up int) (poolPlacement, error) {
	r := poolPlacement{queued: scalePoolQueuedPer * n, fit: scalePoolSlots * up}
	leader, err := g.leaderProc()
	if err != nil {
		return r, err
	}
	r.leader = leader.Name
	cl, err := g.c.Client()
	if err != nil {
		return r, err
	}
	// The slots free are those the pool's earlier work (killed, its
	// ends committing) and the failover's submits do not hold.
	var m0 map[string]float64
	active := -1.0
	err = waitFor(ctx, time.Second, scalePoolSettleWait, func(ctx context.Context) bool {
		m, err := scrapeMetrics(ctx, g.hc, leader.URL()+"/metrics")
		if err != nil {
			return false
		}
		was := active
		m0, active = m, m[activeCount]
		return active == was
	})
	if err != nil {
		return r, fmt.Errorf("wait for the pool's earlier work to end (%v instances hold slots): %w", active, err)
	}
	r.fit -= int(active)
	rest := startCPU(map[string]int{leader.Name: leader.PID()})
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(scalePoolBaseFor):
	}
	r.restCores = rest.used()[leader.Name]
	cpu := startCPU(map[string]int{leader.Name: leader.PID()})
	fmt.Fprintf(os.Stderr, "scale: pool of %d: submitting %d instances for %d slots ...\n", n, r.queued, r.fit)
	start := time.Now()
	for left := r.queued; left > 0; left -= fsm.MaxInstances {
		_, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
			Name:     "scale-place",
			Binaries: map[string]string{client.AnyKey: trueBinary()},
			Min:      min(left, fsm.MaxInstances),
		}})
		if err != nil {
			return r, fmt.Errorf("submit the placement work: %w", err)
		}
	}
	r.submitted = time.Since(start)
	var at []time.Duration
	var counts []float64
	err = waitFor(ctx, time.Second, scalePoolFillWait, func(ctx context.Context) bool {
		m, err := scrapeMetrics(ctx, g.hc, leader.URL()+"/metrics")
		if err != nil {
			return false
		}
		at, counts = append(at, time.Since(start)), append(counts, m[startedCount]-m0[startedCount])
		r.started = int(counts[len(counts)-1])
		return r.started >= r.fit
	})
	if err == nil {
		r.filled = time.Since(start)
	}
	r.cores = cpu.used()[leader.Name]
	r.sustained, r.best = startRates(at, counts, float64(r.fit))
	if r.sustained == 0 && r.filled > 0 {
		// Filled between two polls: a tenth and nine tenths fell in one,
		// so the whole fill is the only span there is.
		r.sustained = float64(r.fit) / r.filled.Seconds()
	}
	fmt.Fprintf(os.Stderr, "scale: pool of %d: %d of %d started after %.1f s (submits %.1f s), %.0f a second sustained, best second %.0f; the leader %.2f cores (%.2f at rest); timing passes with the rest queued ...\n",
		n, r.started, r.fit, time.Since(start).Seconds(), r.submitted.Seconds(), r.sustained, r.best, r.cores, r.restCores)
	if r.filled == 0 {
		return r, nil
	}
	p0, err := scrapeMetrics(ctx, g.hc, leader.URL()+"/metrics")
	if err != nil {
		return r, err
	}
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(scalePoolStuckFor):
	}
	p1, err := scrapeMetrics(ctx, g.hc, leader.URL()+"/metrics")
	if err != nil {
		return r, err
	}
	if passes := p1[passCount] - p0[passCount]; passes > 0 {
		r.stuckPasses = passes / scalePoolStuckFor.Seconds()
		r.stuckPassMS = 1000 * (p1[passSum] - p0[passSum]) / passes
	}
	return r, nil
}

// startRates returns, from the counts of instances started at the times
// at (polled about once a second), the rate between a tenth and nine
// tenths of fit started, and the best rate between two polls.
func startRates(at []time.Duration, counts []float64, fit float64) (sustained, best float64) {
	lo, hi := -1, -1
	for i, c := range counts {
		if lo < 0 && c >= fit/10 {
			lo = i
		}
		if hi < 0 && c >= 9*fit/10 {
			hi = i
		}
		if i > 0 {
			if d := (at[i] - at[i-1]).Seconds(); d > 0 {
				best = max(best, (c-counts[i-1])/d)
			}
		}
	}
	if lo >= 0 && hi > lo {
		sustained = (counts[hi] - counts[lo]) / (at[hi] - at[lo]).Seconds()
	}
	return sustained, best
}

// leaderMSPerStart is the leader's CPU for each instance started, in ms:
// its CPU while the pool filled above its CPU at rest. On this box the
// simulated pool shares the leader's two cores, so the rate alone says
// little of what a leader on a machine of its own would do; what the
// leader spends on each start does (as the allocation suite judges a
// machine's cost by the leader's CPU).
func (r poolPlacement) leaderMSPerStart() (float64, bool) {
	if r.filled == 0 || r.started == 0 {
		return 0, false
	}
	return 1000 * max(r.cores-r.restCores, 0) * r.filled.Seconds() / float64(r.started), true
}

// figures reports r for a pool of size.
func (r poolPlacement) figures(size string) []figure {
	note := fmt.Sprintf("%d instances submitted in jobs of at most %d (accepted in %.1f s) to machines of %d slots; "+
		"started: acknowledged by the stub and its CHILD_REGISTER committed (the leader's %s); sustained: from a tenth to nine tenths of the %d slots; "+
		"leader %s's CPU meanwhile %.2f cores",
		r.queued, fsm.MaxInstances, r.submitted.Seconds(), scalePoolSlots, startedCount, r.fit, r.leader, r.cores)
	figs := []figure{
		{Name: "placement: instances started a second, sustained, " + size, Unit: "/s", Sample: sample(r.sustained), Target: ">= 2000", Note: note},
		{Name: "placement: instances started, best second, " + size, Unit: "/s", Sample: sample(r.best)},
	}
	if ms, ok := r.leaderMSPerStart(); ok {
		figs = append(figs, figure{Name: "placement: the leader's CPU a start, " + size, Unit: "ms", Sample: sample(ms), Target: "<= 0.5",
			Note: fmt.Sprintf("the leader's CPU while the pool filled (%.2f cores) less its CPU at rest just before (%.2f cores, over %v), "+
				"over the instances started: 0.5 ms is 2,000 starts a second on one core of a leader that does nothing else",
				r.cores, r.restCores, scalePoolBaseFor)})
	}
	if r.filled == 0 {
		return append(figs, figure{Name: "placement: every slot running, " + size, Unit: "s",
			Note: fmt.Sprintf("not within %v: %d of %d started", scalePoolFillWait, r.started, r.fit)})
	}
	return append(figs,
		figure{Name: "placement: every slot running, " + size, Unit: "s", Sample: sample(r.filled.Seconds())},
		figure{Name: "placement: a pass with the rest queued, " + size, Unit: "ms", Sample: sample(r.stuckPassMS), Target: "<= 1",
			Note: fmt.Sprintf("%.1f passes a second over %v, the pool full and %d instances waiting", r.stuckPasses, scalePoolStuckFor, r.queued-r.fit)})
}
