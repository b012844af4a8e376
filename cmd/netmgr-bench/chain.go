package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// chainLength is how many jobs the dependency chain has (10 quick).
const (
	chainLength      = 20
	chainLengthQuick = 10
)

// chainSuite measures how soon a dependent job starts once its
// dependency ended: a chain of jobs, each afterok the one before, the
// first held back by a gate file until the whole chain is submitted. The
// gap is the next job's StartedAt minus the previous one's EndedAt, both
// stamped by the stubs (one clock: every stub runs on this host).
func chainSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "chain")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "chain", servers: cfg.servers, stubs: cfg.stubs}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		return chainOn(ctx, cfg, dir, c, cl)
	})
}

// chainOn is chainSuite on c, a ready cluster, through cl.
func chainOn(ctx context.Context, cfg config, dir string, c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
	if err := liftSlots(ctx, cl, c); err != nil {
		return nil, err
	}
	n := chainLength
	if cfg.quick {
		n = chainLengthQuick
	}
	gaps, err := runChain(ctx, cl, filepath.Join(dir, "gate"), n)
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	return []figure{{
		Name:   "dependency chain: gap from A's end to B's start",
		Unit:   "ms",
		Sample: summarize(gaps),
		Target: "p50 <= 50 ms",
		Note:   fmt.Sprintf("a chain of %d jobs, each afterok the one before, on %d servers and %d stubs", n, cfg.servers, cfg.stubs),
	}}, nil
}

// runChain submits n jobs, each afterok the one before, the first waiting
// for gate to exist; it creates gate, waits for the last job and returns
// the n-1 gaps in milliseconds.
func runChain(ctx context.Context, cl *client.Client, gate string, n int) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout+time.Duration(n)*time.Second)
	defer cancel()
	ids := make([]uint64, n)
	for i := range n {
		spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: trueBinary()}}
		if i == 0 {
			spec = client.JobSpec{
				Binaries: map[string]string{client.AnyKey: "/bin/sh"},
				Args:     []string{"-c", "while [ ! -e " + gate + " ]; do sleep 0.01; done"},
			}
		} else {
			spec.AfterOK = []string{strconv.FormatUint(ids[i-1], 10)}
		}
		sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: spec})
		if err != nil {
			return nil, fmt.Errorf("submit job %d of the chain: %w", i+1, err)
		}
		ids[i] = sub.ID
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		return nil, fmt.Errorf("open the gate: %w", err)
	}
	if _, err := cl.WaitJob(ctx, strconv.FormatUint(ids[n-1], 10), client.WaitDone); err != nil {
		return nil, fmt.Errorf("wait for the chain's last job: %w", err)
	}
	jobs := make([]client.Job, n)
	for i, id := range ids {
		j, err := cl.Job(ctx, strconv.FormatUint(id, 10))
		if err != nil {
			return nil, fmt.Errorf("read job %d: %w", id, err)
		}
		if j.State != client.JobDone {
			return nil, fmt.Errorf("job %d of the chain ended %s, want done", id, j.State)
		}
		jobs[i] = j
	}
	gaps := make([]float64, 0, n-1)
	for i := 1; i < n; i++ {
		end, start := jobs[i-1].Instances[0].EndedAt, jobs[i].Instances[0].StartedAt
		if start.Before(end) {
			return nil, fmt.Errorf("job %d started at %v, before job %d ended at %v", ids[i], start, ids[i-1], end)
		}
		gaps = append(gaps, float64(start.Sub(end))/float64(time.Millisecond))
	}
	return gaps, nil
}
