package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

const (
	// failoverStubs is the number of stubs of the failover cluster: a lost
	// machine's work needs somewhere else to go, and a choice of places.
	failoverStubs = 3
	// failoverRounds is how often each failover is measured (3 quick).
	failoverRounds      = 5
	failoverRoundsQuick = 3
	// failoverTimeout bounds one failover; far beyond the targets, it
	// only catches one that never happens.
	failoverTimeout = 60 * time.Second
	// settleTimeout bounds the waits for a cluster to be whole again
	// (a leader, every machine up, a restarted server caught up).
	settleTimeout = 60 * time.Second
	// steadyFor is how long a round waits for the cluster to stay as it
	// is (one leader in one term, every machine up) before it strikes:
	// long enough for every stub to have its lease renewed by this leader
	// and for a new leader to have finished taking office, so that the
	// rounds do not run into each other's aftermath.
	steadyFor = 4 * server.LeaseRenewInterval
	// steadyPoll is how often the steadiness is looked at.
	steadyPoll = 100 * time.Millisecond
)

// errFailover means a failover did not complete.
var errFailover = errors.New("no failover")

// failoverSuite measures, on a process cluster with default settings, the
// time from a machine's loss to its restartable work running elsewhere,
// and from the leader's death to the next accepted submit.
func failoverSuite(ctx context.Context, cfg config) ([]figure, error) {
	if cfg.servers < 3 {
		return nil, fmt.Errorf("failover: needs at least 3 servers to survive the leader's loss, got %d", cfg.servers)
	}
	dir, bin, cleanup, err := benchSetup(cfg, "failover")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "failover", servers: cfg.servers, stubs: failoverStubs, settle: settleTimeout}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		// Jobs and their supervisors outlive a stopped stub: take every
		// machine down whole before withCluster stops the cluster.
		defer func() {
			for i := range c.Stubs {
				if _, err := c.KillStubMachine(i); err != nil {
					fmt.Fprintf(os.Stderr, "failover: %v\n", err)
				}
			}
		}()
		return failoverOn(ctx, cfg, dir, c, cl)
	})
}

// failoverOn is failoverSuite on c, a ready cluster, through cl.
func failoverOn(ctx context.Context, cfg config, dir string, c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
	rounds := failoverRounds
	if cfg.quick {
		rounds = failoverRoundsQuick
	}

	var machine []machineRound
	for r := range rounds {
		res, err := machineLossRound(ctx, c, cl, dir, r)
		if err != nil {
			return nil, fmt.Errorf("machine loss round %d: %w", r+1, err)
		}
		fmt.Fprintf(os.Stderr, "failover: machine loss %d/%d: %s\n", r+1, rounds, res)
		machine = append(machine, res)
	}
	var leader []leaderRound
	for r := range rounds {
		res, err := leaderKillRound(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("leader kill round %d: %w", r+1, err)
		}
		fmt.Fprintf(os.Stderr, "failover: leader kill %d/%d: %s\n", r+1, rounds, res)
		leader = append(leader, res)
	}
	return []figure{
		machineFigure(machine, cfg.servers),
		leaderFigure(leader, cfg.servers),
	}, nil
}

// waitFor calls cond every period until it returns true, ctx ends or
// timeout passes.
func waitFor(ctx context.Context, period, timeout time.Duration, cond func(ctx context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if cond(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, ctx.Err())
		case <-t.C:
		}
	}
}

// waitSteady blocks until probe has answered ok with one and the same
// state for steadyFor, or timeout passes.
func waitSteady(ctx context.Context, timeout time.Duration, probe func(ctx context.Context) (string, bool)) error {
	var (
		last  string
		since time.Time
	)
	err := waitFor(ctx, steadyPoll, timeout, func(ctx context.Context) bool {
		state, ok := probe(ctx)
		switch {
		case !ok:
			since = time.Time{}
		case since.IsZero() || state != last:
			last, since = state, time.Now()
		}
		return !since.IsZero() && time.Since(since) >= steadyFor
	})
	if err != nil {
		return fmt.Errorf("wait for a steady cluster (last seen %q): %w", last, err)
	}
	return nil
}

// seconds converts durations to seconds.
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}
