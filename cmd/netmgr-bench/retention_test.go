package main

import (
	"context"
	"strings"
	"testing"
)

// TestRetentionRun runs the retention suite's fsm part small, without
// the server's restarts: with retention every checkpoint holds the kept
// finished jobs and the few in flight, without it every job; the figures
// and the table name both runs.
func TestRetentionRun(t *testing.T) {
	cfg := defaultConfig(true)
	cfg.insecure = true // no certificates: no server is started
	kept := &retentionRun{label: "retention", keep: 1_000, jobs: 6_000}
	if err := kept.run(context.Background(), cfg, "", t.TempDir(), 2_000); err != nil {
		t.Fatalf("run with retention: %v", err)
	}
	all := &retentionRun{label: "no retention", jobs: 4_000}
	if err := all.run(context.Background(), cfg, "", t.TempDir(), 2_000); err != nil {
		t.Fatalf("run without retention: %v", err)
	}
	if len(kept.points) != 3 || len(all.points) != 2 {
		t.Fatalf("got %d and %d checkpoints, want 3 and 2", len(kept.points), len(all.points))
	}
	for _, pt := range kept.points {
		// 1,000 finished and about 3% of the last 10 batches in flight.
		if pt.live < 1_000 || pt.live > 1_000+retentionSteady*100 {
			t.Errorf("at %d jobs with retention: %d live, want 1000 and the few in flight", pt.jobs, pt.live)
		}
		if pt.snapMiB <= 0 || len(pt.restores) != 1 || pt.restoredMiB <= 0 {
			t.Errorf("at %d jobs: snapshot %.2f MiB, %d restores, restored %.2f MiB; want all measured", pt.jobs, pt.snapMiB, len(pt.restores), pt.restoredMiB)
		}
	}
	for _, pt := range all.points {
		if pt.live != pt.jobs {
			t.Errorf("at %d jobs without retention: %d live, want all", pt.jobs, pt.live)
		}
	}
	if last := all.points[1]; last.snapMiB <= kept.points[2].snapMiB {
		t.Errorf("4,000 jobs kept snapshot to %.2f MiB, 1,000 to %.2f: want more", last.snapMiB, kept.points[2].snapMiB)
	}
	figs := retentionFigures(kept, all)
	if len(figs) == 0 || figs[0].Sample.N != 3 || figs[0].Sample.Max > 1_000+retentionSteady*100 {
		t.Errorf("got figures %+v, want the first over the 3 checkpoints, bounded", figs)
	}
	table := retentionTable(kept, all)
	for _, want := range []string{"--job-retention-count 1000", "--job-retention 0", "6k", "4k"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
