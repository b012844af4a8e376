package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/netmgr/netmgr/matcher"
)

// The resources suite's sizes: one match among 10,000 machines, timed in
// rounds of resourcesMatches, today's request and the resource requests
// alternating round by round so a shared machine's noise falls on both.
const (
	resourcesMachines     = 10_000
	resourcesMatches      = 2_000
	resourcesRounds       = 15
	resourcesRoundsQuick  = 5
	resourcesTargetFactor = 1.20
)

// resourcesSuite times the matcher on 10,000 machines in 20 classes (as
// matcher's BenchmarkMatch10kClasses: an x86_64 job needing fpu, mem>1024
// and 512 MB) against the same request asking also for 2 CPUs and 1 GB of
// disk, and for one a100 GPU and an fpga besides: issue 39 holds placement
// with resources to at most 20% over today's match. Each figure is
// microseconds of the thread's CPU time per match.
func resourcesSuite(ctx context.Context, cfg config) ([]figure, error) {
	rounds := resourcesRounds
	if cfg.quick {
		rounds = resourcesRoundsQuick
	}
	pool := matcher.NewPool(resourceBenchMachines(resourcesMachines))
	base := matcher.Request{
		JobID: 12345, Instance: 7, Owner: "fred",
		BinaryKeys:   []string{"x86_64"},
		Keys:         []string{"fpu"},
		Requirements: []matcher.Requirement{{Attr: "mem", Op: ">", Value: 1024}},
		MemoryMB:     512,
	}
	cpus := base
	cpus.CPUs, cpus.DiskMB = 2, 1000
	gpus := cpus
	gpus.GPUs, gpus.GPUType, gpus.Gres = 1, "a100", []matcher.GresRequest{{Name: "fpga", Count: 1}}
	reqs := []matcher.Request{base, cpus, gpus}
	m := matcher.New()
	samples := make([][]float64, len(reqs))
	for i := range rounds + 1 { // round 0 warms up and is not counted
		for k, req := range reqs {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			us, err := timeMatches(m, pool, req)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				samples[k] = append(samples[k], us)
			}
		}
	}
	med := func(k int) float64 { return summarize(samples[k]).Median }
	target := fmt.Sprintf("<= %.1f (%.0f%% of today's)", med(0)*resourcesTargetFactor, resourcesTargetFactor*100)
	note := fmt.Sprintf("resources: one match among %d machines, %d per round, %d rounds alternating the requests; "+
		"medians %.1f%% (cpus, disk) and %.1f%% (gpus, gres too) of today's", resourcesMachines, resourcesMatches, rounds,
		100*med(1)/med(0), 100*med(2)/med(0))
	return []figure{
		{Name: "match on 10k machines, today's request", Unit: "us", Sample: summarize(samples[0])},
		{Name: "match on 10k machines, with cpus and disk", Unit: "us", Sample: summarize(samples[1]), Target: target},
		{Name: "match on 10k machines, with gpus and gres too", Unit: "us", Sample: summarize(samples[2]), Target: target, Note: note},
	}, nil
}

// timeMatches returns the thread CPU time of one match of req, in
// microseconds, averaged over resourcesMatches.
func timeMatches(m *matcher.Matcher, pool *matcher.Pool, req matcher.Request) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for range resourcesMatches {
		if m.MatchPool(req, pool).Machine < 0 {
			return 0, fmt.Errorf("resources: no machine for %+v", req)
		}
	}
	return float64((threadCPU() - cpu0).Nanoseconds()) / 1000 / resourcesMatches, nil
}

// resourceBenchMachines returns n machines in 20 classes, as matcher's
// classMachines: class c has architecture x86_64, aarch64, sparc or mips
// (c%4) and, by c/4, the keys fpu (c/4 != 4), mathlab (0) and gpu (1);
// mem and rating attributes, one mount, 16 slots, 64 GB and 200 GB of
// disk; the gpu classes have four a100 GPUs and two fpga. Every tenth
// machine is full. Built without randomness.
func resourceBenchMachines(n int) []matcher.MachineView {
	archs := []string{"x86_64", "aarch64", "sparc", "mips"}
	ms := make([]matcher.MachineView, n)
	for i := range ms {
		c := i % 20
		keys := []string{archs[c%4], fmt.Sprintf("class%02d", c)}
		if c/4 != 4 {
			keys = append(keys, "fpu")
		}
		switch c / 4 {
		case 0:
			keys = append(keys, "mathlab")
		case 1:
			keys = append(keys, "gpu")
		}
		slices.Sort(keys)
		r := float64(1 + i%3)
		ms[i] = matcher.MachineView{
			Name: fmt.Sprintf("node%05d.example.org", i), Keys: keys,
			Attrs:  map[string]float64{"mem": 65536, "rating": r, "nprocs": 16},
			Mounts: []string{"/home"}, Up: true, Awake: true, Slots: 16,
			Load: float64(i%13) / 4, Rating: r, MemoryMB: 65536, DiskMB: 200_000,
		}
		if c/4 == 1 {
			ms[i].GPUs = []matcher.GPU{{Type: "a100"}, {Type: "a100"}, {Type: "a100"}, {Type: "a100"}}
			ms[i].Gres = map[string]int{"fpga": 2}
		}
		if i%10 == 0 {
			ms[i].Running = ms[i].Slots
			ms[i].ImposedLoad = float64(ms[i].Slots)
		}
	}
	return ms
}
