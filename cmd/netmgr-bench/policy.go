package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
	"github.com/netmgr/netmgr/server/policy"
)

// The policy suite's sizes: as server/planner's BenchmarkPassFairShare,
// 100 machines of 8 slots with one free, 1,000 users who have run a job
// each, and 10,000 waiting jobs of 10 instances.
const (
	policyUsers       = 1_000
	policyJobs        = 10_000
	policyPerJob      = 10
	policyRounds      = 15
	policyRoundsQuick = 5
)

// policyScript is a priority a site might write: short jobs first, then
// whoever used least for their share.
const policyScript = `
def priority(job, user, usage, now):
    p = -usage["user"] / max(user["share"], 1)
    if job["time_limit"] > 0 and job["time_limit"] <= 3600:
        p += 1000000
    return p
`

// policySuite times one scheduling pass over 100,000 waiting instances
// of 1,000 users with fair share on, ordered by fair share and by a site
// policy script's priority (one call per waiting job), the two taken in
// turn round by round so a shared machine's noise falls on both, each by
// its thread's CPU time. Issue 37 holds the policy pass near the fair
// share one.
func policySuite(ctx context.Context, cfg config) ([]figure, error) {
	rounds := policyRounds
	if cfg.quick {
		rounds = policyRoundsQuick
	}
	fmt.Fprintf(os.Stderr, "policy: building %d waiting jobs of %d instances of %d users ...\n", policyJobs, policyPerJob, policyUsers)
	f, err := policyState()
	if err != nil {
		return nil, err
	}
	prog, err := policy.Compile(policyScript)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var failed error
	pass := func(site *policy.Program) (float64, error) {
		runtime.GC()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		placed := 0
		f.Read(func(v fsm.View) {
			placed = len(planner.New(v, allUp(v), now).Site(site, func(err error) { failed = err }).Place().Assignments)
		})
		cpu := threadCPU() - cpu0
		if failed != nil {
			return 0, fmt.Errorf("policy: the script failed: %w", failed)
		}
		if placed != 1 {
			return 0, fmt.Errorf("policy: placed %d, want 1", placed)
		}
		return cpu.Seconds() * 1000, nil
	}
	var offs, ons []float64
	for i := range rounds + 1 { // round 0 warms up and is not counted
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		off, err := pass(nil)
		if err != nil {
			return nil, err
		}
		on, err := pass(prog)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			offs, ons = append(offs, off), append(ons, on)
		}
	}
	size := fmt.Sprintf("%d waiting instances of %d users", policyJobs*policyPerJob, policyUsers)
	ratio := summarize(ons).Median / summarize(offs).Median
	note := fmt.Sprintf("policy: thread CPU of one pass, fair share vs a site policy priority script (one call per waiting job); "+
		"median ratio %.2f; %d rounds alternating, on a shared machine", ratio, rounds)
	return []figure{
		{Name: "scheduling pass CPU time, fair share, " + size, Unit: "ms", Sample: summarize(offs)},
		{Name: "scheduling pass CPU time, site policy priority, " + size, Unit: "ms", Sample: summarize(ons), Note: note},
	}, nil
}

// policyState is the suite's state (BenchmarkPassFairShare's): fair share
// on, 100 machines, every user charged for one run of 1 to 1,000 s, all
// slots but one held by a filler user, and the waiting jobs submitted
// round the users.
func policyState() (*fsm.FSM, error) {
	f := fsm.New()
	var index uint64
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	apply := func(t fsm.MessageType, body any) (*fsm.Result, error) {
		index++
		return applyOne(f, index, t, body)
	}
	if _, err := apply(fsm.FairShareStartType, fsm.FairShareStart{At: at}); err != nil {
		return nil, err
	}
	for m := range 100 {
		if _, err := apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: fmt.Sprintf("m%03d", m), Arch: "x86_64", CPUs: 8, MemoryMB: 1 << 16}}); err != nil {
			return nil, err
		}
	}
	spec := func(n int) fsm.JobSpec { return fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: n} }
	for u := range policyUsers {
		res, err := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: fmt.Sprintf("user%04d", u), Spec: spec(1)})
		if err != nil {
			return nil, err
		}
		id, machine := res.JobID, fmt.Sprintf("m%03d", u%100)
		for _, c := range []struct {
			t    fsm.MessageType
			body any
		}{
			{fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 1, Machine: machine, Key: "*"}}}},
			{fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: id, Instance: 0, Attempt: 1, Machine: machine, PID: 1}},
			{fsm.ChildTermType, fsm.ChildTerm{At: at.Add(time.Duration(1+u) * time.Second), JobID: id, Instance: 0, Attempt: 1, Machine: machine}},
		} {
			if _, err := apply(c.t, c.body); err != nil {
				return nil, err
			}
		}
	}
	for m := range 100 {
		n := 8
		if m == 0 {
			n = 7
		}
		res, err := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "filler", Spec: spec(n)})
		if err != nil {
			return nil, err
		}
		var as []fsm.Assignment
		for i := range n {
			as = append(as, fsm.Assignment{JobID: res.JobID, Instance: i, Attempt: 1, Machine: fmt.Sprintf("m%03d", m), Key: "*"})
		}
		if _, err := apply(fsm.PlaceType, fsm.Place{At: at, Assignments: as}); err != nil {
			return nil, err
		}
	}
	for j := range policyJobs {
		if _, err := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: fmt.Sprintf("user%04d", j%policyUsers), Spec: spec(policyPerJob)}); err != nil {
			return nil, err
		}
	}
	return f, nil
}
