package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// The start-cost suite's shape: startCPURounds rounds, each of
// startCPUJobs jobs of 1 instance and startCPUJobs of allocStubs
// instances, each round's two windows counted by perf.
const (
	startCPURounds = 7
	startCPUJobs   = 4
	startCPUIdle   = 2 * time.Second
)

// startCPURoles are the cluster's process roles perf counts: the leader
// and the followers apart (on a real pool the leader's share is the one
// every added machine adds to the same process), then the roles the
// command's first argument names.
var startCPURoles = []string{"leader", "followers", "stub", "supervise"}

// startCPUSuite measures what one more machine in an allocation costs
// each kind of process: CPU time, context switches and page faults (perf
// stat, per role, only while the jobs run; the idle cluster's rate taken
// off). A
// round runs startCPUJobs jobs of `netexec --unique -n 1 --wait started
// /bin/true` and as many of -n 12, each waited for to its end (so its
// CHILD_TERMs are in the count too); the difference over the 11 machines
// is one instance's start, run and end. It runs only when -only names
// it, and needs perf.
func startCPUSuite(ctx context.Context, cfg config) ([]figure, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return []figure{{Name: "start CPU per machine", Unit: "ms", Note: "not measured: no perf (" + err.Error() + ")"}}, nil
	}
	a, stop, err := startAllocCluster(ctx, cfg, "startcpu")
	if err != nil {
		return nil, err
	}
	defer stop()
	v := allocVariant{}
	for range allocWarmup {
		if _, _, err := a.once(ctx, v, allocStubs); err != nil {
			return nil, err
		}
	}
	pids := clusterPIDs(a.bin, a.c.Dir())
	leader, _ := a.c.Leader()
	if leader < 0 {
		return nil, fmt.Errorf("startcpu: no leader")
	}
	splitServers(pids, a.c.Servers[leader].PID())
	idle, err := perfWindow(ctx, pids, func() error {
		select {
		case <-ctx.Done():
		case <-time.After(startCPUIdle):
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	per := make(map[string][]float64) // by role and counter: per added machine
	for round := range startCPURounds {
		var byN [2]perfCounts
		for i, n := range []int{1, allocStubs} {
			byN[i], err = perfWindow(ctx, pids, func() error {
				for range startCPUJobs {
					if _, _, err := a.once(ctx, v, n); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			byN[i].less(idle)
		}
		line := fmt.Sprintf("startcpu: round %d, per added machine:", round+1)
		for _, k := range slices.Sorted(maps.Keys(byN[1].values)) {
			x := (byN[1].values[k] - byN[0].values[k]) / float64(startCPUJobs*(allocStubs-1))
			per[k] = append(per[k], x)
			line += fmt.Sprintf(" %s %.3g", k, x)
		}
		fmt.Fprintln(os.Stderr, line)
	}
	var figs []figure
	for _, k := range slices.Sorted(maps.Keys(per)) {
		role, counter, _ := strings.Cut(k, " ")
		unit, scale := "", 1.0
		if counter == "task-clock" {
			unit = "ms"
		}
		xs := per[k]
		for i := range xs {
			xs[i] *= scale
		}
		figs = append(figs, figure{Name: fmt.Sprintf("start CPU per added machine, %s, %s", role, counter), Unit: unit, Sample: summarize(xs)})
	}
	figs[0].Note = fmt.Sprintf("perf stat per role while %d jobs of -n 1 and %d of -n %d ran to their end, the idle rate taken off; (-n %d minus -n 1) / %d per job, %d rounds",
		startCPUJobs, startCPUJobs, allocStubs, allocStubs, allocStubs-1, startCPURounds)
	return figs, nil
}

// startAllocCluster starts the alloc suite's cluster in a new bench
// directory for the named suite, with the netmgr binary of cfg (built
// there when none is given), and returns what runs allocations on it and
// what stops it and removes the directory.
func startAllocCluster(ctx context.Context, cfg config, suite string) (allocRun, func(), error) {
	dir, bin, cleanup, err := benchSetup(cfg, suite)
	if err != nil {
		return allocRun{}, nil, err
	}
	a, stop, err := allocClusterIn(ctx, cfg, bin, dir)
	if err != nil {
		cleanup()
		return allocRun{}, nil, err
	}
	return a, func() { stop(); cleanup() }, nil
}

// allocClusterIn starts the alloc suite's cluster in dir, loads the
// bench database and returns what runs allocations on it, and what stops
// it.
func allocClusterIn(ctx context.Context, cfg config, bin, dir string) (allocRun, func(), error) {
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		return allocRun{}, nil, fmt.Errorf("alloc cluster: %w", err)
	}
	netexec := filepath.Join(links, "netexec")
	if err := os.Symlink(bin, netexec); err != nil {
		return allocRun{}, nil, fmt.Errorf("alloc cluster: %w", err)
	}
	spec := clusterSpec{suite: "alloc", servers: cfg.servers, stubs: allocStubs,
		database: client.DatabaseText{Filename: "alloc.db", Text: benchDatabase}}
	c, cl, err := readyCluster(ctx, cfg, bin, dir, spec)
	if err != nil {
		return allocRun{}, nil, err
	}
	return allocRun{bin: bin, netexec: netexec, env: append(os.Environ(), c.Env()...), cl: cl, c: c}, c.Stop, nil
}

// splitServers files the server processes of pids under "leader" (the
// one with PID leader) and "followers".
func splitServers(pids map[string][]int, leader int) {
	for _, pid := range pids["server"] {
		role := "followers"
		if pid == leader {
			role = "leader"
		}
		pids[role] = append(pids[role], pid)
	}
	delete(pids, "server")
}
