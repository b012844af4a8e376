package planner_test

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
	"github.com/netmgr/netmgr/server/policy"
)

// benchShareState is 100 machines of 8 slots with one slot free, 1,000
// users who have each run a job of 1 to 1,000 seconds, and 100,000
// waiting instances: 10,000 jobs of 10, 10 per user, submitted round the
// users. fair says whether fair share is on (FairShareStart committed
// before the runs, so they are charged).
func benchShareState(b *testing.B, fair bool) *fsm.FSM {
	b.Helper()
	f := fsm.New()
	apply := applier(b, f)
	if fair {
		apply(fsm.FairShareStartType, fsm.FairShareStart{At: at})
	}
	for m := range 100 {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: fmt.Sprintf("m%03d", m), Arch: "x86_64", CPUs: 8, MemoryMB: 1 << 16}})
	}
	spec := func(n int) fsm.JobSpec { return fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: n} }
	for u := range 1000 {
		owner := fmt.Sprintf("user%04d", u)
		id := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: owner, Spec: spec(1)}).JobID
		machine := fmt.Sprintf("m%03d", u%100)
		apply(fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 1, Machine: machine, Key: "*"}}})
		apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: id, Instance: 0, Attempt: 1, Machine: machine, PID: 1})
		apply(fsm.ChildTermType, fsm.ChildTerm{At: at.Add(time.Duration(1+u) * time.Second), JobID: id, Instance: 0, Attempt: 1, Machine: machine})
	}
	// Fill all but one slot with long runs of one user.
	for m := range 100 {
		machine := fmt.Sprintf("m%03d", m)
		n := 8
		if m == 0 {
			n = 7
		}
		id := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "filler", Spec: spec(n)}).JobID
		var as []fsm.Assignment
		for i := range n {
			as = append(as, fsm.Assignment{JobID: id, Instance: i, Attempt: 1, Machine: machine, Key: "*"})
		}
		apply(fsm.PlaceType, fsm.Place{At: at, Assignments: as})
	}
	for j := range 10000 {
		apply(fsm.SubmitType, fsm.Submit{At: at, Owner: fmt.Sprintf("user%04d", j%1000), Spec: spec(10)})
	}
	return f
}

// BenchmarkPassFairShare is one scheduling pass over 100,000 waiting
// instances of 1,000 users, with fair share off (today's order) and on,
// the two passes taken in turn so that both see the same load (the
// machine is shared), each timed by the CPU time of its thread (a pass
// runs on one goroutine, locked to its thread here), so that other
// processes' load does not count, and the means reported: off-ms and
// on-ms per pass, and on/off. The bound: on adds at most 20%
// (on/off <= 1.2).
func BenchmarkPassFairShare(b *testing.B) {
	off, on := benchShareState(b, false), benchShareState(b, true)
	now := at.Add(time.Hour)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pass := func(f *fsm.FSM) time.Duration {
		began := threadCPU(b)
		f.Read(func(v fsm.View) {
			if p := planner.New(v, allUp(v), now).Place(); len(p.Assignments) != 1 {
				b.Fatalf("placed %d, want 1", len(p.Assignments))
			}
		})
		return threadCPU(b) - began
	}
	var offs, ons []time.Duration
	b.ResetTimer()
	for range b.N {
		offs = append(offs, pass(off))
		ons = append(ons, pass(on))
	}
	b.StopTimer()
	// A thread's CPU time moves in ticks (4 ms here), as coarse as the
	// passes themselves: the means of many passes resolve what one
	// pass's median cannot.
	mOff, mOn := mean(offs), mean(ons)
	b.ReportMetric(float64(mOff)/1e6, "off-ms")
	b.ReportMetric(float64(mOn)/1e6, "on-ms")
	b.ReportMetric(float64(mOn)/float64(mOff), "on/off")
}

// mean is the mean of ds.
func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// benchPolicy is a priority a site might write: short jobs first, then
// the users who have used least, weighed by share.
const benchPolicy = `
def priority(job, user, usage, now):
    p = -usage["user"] / max(user["share"], 1)
    if job["time_limit"] > 0 and job["time_limit"] <= 3600:
        p += 1000000
    return p
`

// BenchmarkPassPolicy is one scheduling pass over the 100,000 waiting
// instances of 1,000 users of BenchmarkPassFairShare (fair share on),
// with the site policy's priority loaded and without, the two taken in
// turn, each timed by its thread's CPU time: off-ms (fair share), on-ms
// (the script, one call per waiting job) and on/off.
func BenchmarkPassPolicy(b *testing.B) {
	f := benchShareState(b, true)
	prog, err := policy.Compile(benchPolicy)
	if err != nil {
		b.Fatal(err)
	}
	now := at.Add(time.Hour)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pass := func(site *policy.Program) time.Duration {
		began := threadCPU(b)
		f.Read(func(v fsm.View) {
			p := planner.New(v, allUp(v), now).Site(site, func(err error) { b.Fatal(err) }).Place()
			if len(p.Assignments) != 1 {
				b.Fatalf("placed %d, want 1", len(p.Assignments))
			}
		})
		return threadCPU(b) - began
	}
	var offs, ons []time.Duration
	b.ResetTimer()
	for range b.N {
		offs = append(offs, pass(nil))
		ons = append(ons, pass(prog))
	}
	b.StopTimer()
	// A thread's CPU time moves in ticks (4 ms here), as coarse as the
	// passes themselves: the means of many passes resolve what one
	// pass's median cannot.
	mOff, mOn := mean(offs), mean(ons)
	b.ReportMetric(float64(mOff)/1e6, "off-ms")
	b.ReportMetric(float64(mOn)/1e6, "on-ms")
	b.ReportMetric(float64(mOn)/float64(mOff), "on/off")
}
