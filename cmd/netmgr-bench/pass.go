package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// The pass suite's sizes: 100 jobs of 100 instances pending on 1,000
// machines that have run a history of 20,000 jobs.
const (
	passMachines    = 1_000
	passHistory     = 20_000
	passPending     = 100
	passPerJob      = 100
	passRounds      = 10
	passRoundsQuick = 5
)

// passSuite times one scheduling pass placing 10,000 queued instances on
// 1,000 machines through the leader's own planner (package
// server/planner, called as the leader calls it), and
// the Place that commits it (encoded and applied to the FSM, without
// Raft). Every round starts from the same state, restored from a
// snapshot.
func passSuite(ctx context.Context, cfg config) ([]figure, error) {
	rounds := passRounds
	if cfg.quick {
		rounds = passRoundsQuick
	}
	fmt.Fprintf(os.Stderr, "pass: building %d machines, %d finished jobs and %d pending jobs of %d instances ...\n",
		passMachines, passHistory, passPending, passPerJob)
	f, queued, err := passState(passMachines, passHistory, passPending, passPerJob)
	if err != nil {
		return nil, err
	}
	state, err := snapshotBytes(f)
	if err != nil {
		return nil, err
	}
	var plans, cpus, commits, allocs []float64
	for i := range rounds + 1 { // round 0 warms up and is not counted
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		g := fsm.New()
		if err := g.Restore(io.NopCloser(bytes.NewReader(state))); err != nil {
			return nil, err
		}
		r, err := passRound(g)
		if err != nil {
			return nil, err
		}
		if r.placed != queued {
			return nil, fmt.Errorf("pass: placed %d of %d queued instances, want all", r.placed, queued)
		}
		if i == 0 {
			continue
		}
		plans = append(plans, r.plan.Seconds()*1000)
		cpus = append(cpus, r.cpu.Seconds()*1000)
		commits = append(commits, r.commit.Seconds()*1000)
		allocs = append(allocs, r.allocMiB)
	}
	size := fmt.Sprintf("%d queued on %d machines", queued, passMachines)
	note := fmt.Sprintf("pass: %d pending jobs of %d instances plus the queued ones of a %d-job history; "+
		"the pass allocates %.0f MiB; %d rounds, each from the same restored state, on a shared machine",
		passPending, passPerJob, passHistory, summarize(allocs).Median, rounds)
	return []figure{
		{Name: "scheduling pass, " + size, Unit: "ms", Sample: summarize(plans), Target: "<= 200 ms"},
		{Name: "scheduling pass CPU time, " + size, Unit: "ms", Sample: summarize(cpus)},
		{Name: "Place encode+apply, " + size, Unit: "ms", Sample: summarize(commits), Note: note},
	}, nil
}

// passResult is what one round measured.
type passResult struct {
	plan, commit time.Duration
	cpu          time.Duration // the pass's CPU time
	placed       int
	allocMiB     float64
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// passRound plans one pass over f as the leader does, every machine's
// stub taken as up with no load reported, then encodes and applies the
// Place, checking that it is accepted whole.
func passRound(f *fsm.FSM) (passResult, error) {
	var r passResult
	var plan fsm.Place
	runtime.GC() // the previous round's garbage is not this one's cost
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// The pass runs on this goroutine alone, locked to its thread, so the
	// thread's CPU time is the pass's, however busy the machine is.
	runtime.LockOSThread()
	cpu0 := threadCPU()
	f.Read(func(v fsm.View) {
		start := time.Now()
		plan = planner.New(v, allUp(v), time.Now()).Place()
		r.plan = time.Since(start)
	})
	r.cpu = threadCPU() - cpu0
	runtime.UnlockOSThread()
	runtime.ReadMemStats(&after)
	r.allocMiB = float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	plan.At = time.Now().UTC()
	start := time.Now()
	res, err := applyOne(f, plan.PlannedAtIndex+1, fsm.PlaceType, plan)
	if err != nil {
		return r, err
	}
	r.commit = time.Since(start)
	if res.Dropped != 0 {
		return r, fmt.Errorf("pass: the FSM dropped %d of %d assignments", res.Dropped, len(plan.Assignments))
	}
	r.placed = len(res.Accepted)
	return r, nil
}

// allUp is the liveness of every machine of v as the leader would see it
// with every stub alive in gossip and no load reported.
func allUp(v fsm.View) map[string]planner.Liveness {
	live := make(map[string]planner.Liveness)
	for _, m := range v.Machines() {
		live[m.Name] = planner.Liveness{Up: true}
	}
	return live
}
