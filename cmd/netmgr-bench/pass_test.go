package main

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server"
)

// BenchmarkPlanPass is the pass suite's scheduling pass as a Go benchmark,
// for profiling: server.PlanPass over 10,000 queued instances (plus a
// history's) on 1,000 machines, without committing the plan.
func BenchmarkPlanPass(b *testing.B) {
	f, queued, err := passState(passMachines, passHistory, passPending, passPerJob)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	placed := 0
	for b.Loop() {
		f.Read(func(v fsm.View) { placed = len(server.PlanPass(v, time.Now())) })
	}
	if placed != queued {
		b.Fatalf("placed %d of %d queued instances, want all", placed, queued)
	}
}
