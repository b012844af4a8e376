package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The idle suite's timing: the cluster settles for idleSettle after its
// machines are up (joins, first snapshots, the stubs' first facts), then
// each process's CPU is read from /proc over idleRounds windows of
// idleWindow (shorter under BENCH_QUICK).
const (
	idleSettle      = 15 * time.Second
	idleWindow      = 60 * time.Second
	idleWindowQuick = 20 * time.Second
	idleRounds      = 3
)

// idleSuite measures what a small pool costs doing nothing (issue 36 item
// 2): 3 servers and 2 stubs as processes, TLS on every link, no job, the
// CPU each process used over a window, in ms of CPU per s of wall time
// (thousandths of a core), by role: the leader, each follower, each stub.
// A window in which the leader changed is measured again.
func idleSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "idle")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "idle", servers: cfg.servers, stubs: cfg.stubs}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, _ *client.Client) ([]figure, error) {
		return idleOn(ctx, cfg, c)
	})
}

// idleOn is idleSuite on c, a ready cluster.
func idleOn(ctx context.Context, cfg config, c *servertest.ProcCluster) ([]figure, error) {
	window := idleWindow
	if cfg.quick {
		window = idleWindowQuick
	}
	if err := idleWait(ctx, idleSettle); err != nil {
		return nil, err
	}
	var leader, follower, stub []float64
	for round, tries := 0, 0; round < idleRounds; tries++ {
		if tries >= 2*idleRounds {
			return nil, fmt.Errorf("idle: the leader changed in %d of %d windows", tries-round, tries)
		}
		li, _ := c.Leader()
		if li < 0 {
			return nil, fmt.Errorf("idle: no leader")
		}
		pids := make(map[string]int)
		for i, p := range c.Servers {
			pids[fmt.Sprintf("server%d", i)] = p.PID()
		}
		for i, p := range c.Stubs {
			pids[fmt.Sprintf("stub%d", i)] = p.PID()
		}
		w := startCPU(pids)
		if err := idleWait(ctx, window); err != nil {
			return nil, err
		}
		used := w.used()
		if after, _ := c.Leader(); after != li {
			fmt.Fprintf(os.Stderr, "idle: the leader changed during window %d: measured again\n", tries+1)
			continue
		}
		round++
		var line []string
		for i := range c.Servers {
			ms := 1000 * used[fmt.Sprintf("server%d", i)]
			if i == li {
				leader = append(leader, ms)
				line = append(line, fmt.Sprintf("leader %.1f", ms))
			} else {
				follower = append(follower, ms)
				line = append(line, fmt.Sprintf("follower %.1f", ms))
			}
		}
		for i := range c.Stubs {
			ms := 1000 * used[fmt.Sprintf("stub%d", i)]
			stub = append(stub, ms)
			line = append(line, fmt.Sprintf("stub %.1f", ms))
		}
		fmt.Fprintf(os.Stderr, "idle: window %d of %s: %s ms of CPU per s\n", round, window, strings.Join(line, ", "))
	}
	note := fmt.Sprintf("%d servers and %d stubs as processes, TLS, no job; CPU from /proc (10 ms ticks) over %d windows of %s each, %s after the machines were up; ms of CPU per s of wall time (1 = 0.001 cores); the box is shared, so take the low end",
		len(c.Servers), len(c.Stubs), idleRounds, window, idleSettle)
	return []figure{
		{Name: "idle: leader CPU", Unit: "ms/s", Sample: summarize(leader), Target: "<= 3 ms/s", Note: note},
		{Name: "idle: each follower's CPU", Unit: "ms/s", Sample: summarize(follower), Target: "<= 3 ms/s"},
		{Name: "idle: each stub's CPU", Unit: "ms/s", Sample: summarize(stub), Target: "<= 1 ms/s"},
	}, nil
}

// idleWait waits d, or until ctx ends.
func idleWait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("idle: %w", ctx.Err())
	case <-time.After(d):
		return nil
	}
}
