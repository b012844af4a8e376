package main

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// BenchmarkPlanPass is the pass suite's scheduling pass as a Go benchmark,
// for profiling: one planner pass over 10,000 queued instances (plus a
// history's) on 1,000 machines, as the leader runs it, without committing
// the plan.
func BenchmarkPlanPass(b *testing.B) {
	f, queued, err := passState(passMachines, passHistory, passPending, passPerJob)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	placed := 0
	for b.Loop() {
		f.Read(func(v fsm.View) { placed = len(planner.New(v, allUp(v), time.Now()).Place().Assignments) })
	}
	if placed != queued {
		b.Fatalf("placed %d of %d queued instances, want all", placed, queued)
	}
}
