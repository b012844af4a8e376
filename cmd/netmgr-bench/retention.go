package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// The retention suite's sizes (issue 19): 2,000,000 jobs submitted and
// finished with --job-retention-count 10000, measured every 100,000, and
// the same run without retention as far as 500,000; a twentieth when
// quick.
const (
	retentionJobs          = 2_000_000
	retentionJobsQuick     = 100_000
	retentionEvery         = 100_000
	retentionEveryQuick    = 10_000
	retentionBaseline      = 500_000
	retentionBaselineQuick = 50_000
	// retentionKeep is the servers' --job-retention-count: the finished
	// jobs kept, the earliest ended going first.
	retentionKeep     = 10_000
	retentionMachines = 1_000
	// retentionSteady is how many batches of 1,000 jobs a running job
	// runs for: about 3% of each batch, so some 300 jobs are in flight.
	retentionSteady = 10
	// retentionRounds is how often the restore and the server's restart
	// are measured where the server is restarted.
	retentionRounds = 3
)

// retentionPoint is what one checkpoint of a run measured.
type retentionPoint struct {
	jobs    int     // submitted so far
	live    int     // jobs in the database
	heapMiB float64 // live heap after a collection, the FSM's and the benchmark's
	// restoredMiB is what an FSM restored from the snapshot adds to the
	// live heap: the state without what running it may have left over.
	restoredMiB float64
	snapMiB     float64 // the snapshot file
	snapSec     float64 // Snapshot+Persist
	restores    []float64
	// serving and rss are the real server's restarts, where measured.
	serving, rss []float64
}

// retentionRun is one run of the generator, with or without retention.
type retentionRun struct {
	label    string
	keep     int // --job-retention-count; 0 keeps every job
	jobs     int
	restarts []int // the checkpoints where the server is restarted
	points   []retentionPoint
}

// retentionSuite applies the commands of millions of jobs, submitted,
// placed, registered and ended, to an FSM, with the JobsExpire a leader
// with --job-retention-count proposes after every batch of 1,000, and
// measures at every checkpoint the jobs the database holds, the live
// heap, the snapshot's size and its restore; at a few it starts a real
// server on the snapshot and times it to serving. The same run without
// retention, as far as it is affordable, shows what retention saves.
// Then a real server with a short --job-retention runs jobs on simulated
// stubs (retentionServer), for what the FSM alone does not hold: the
// leader's own tables, the Raft log and its snapshots.
func retentionSuite(ctx context.Context, cfg config) ([]figure, error) {
	jobs, every, baseline := retentionJobs, retentionEvery, retentionBaseline
	restarts := []int{500_000, 1_000_000, 2_000_000}
	if cfg.quick {
		jobs, every, baseline = retentionJobsQuick, retentionEveryQuick, retentionBaselineQuick
		restarts = []int{50_000, 100_000}
	}
	dir, bin, cleanup, err := benchSetup(cfg, "retention")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	kept := &retentionRun{label: "retention", keep: retentionKeep, jobs: jobs, restarts: restarts}
	if err := kept.run(ctx, cfg, bin, filepath.Join(dir, "kept"), every); err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	all := &retentionRun{label: "no retention", jobs: baseline, restarts: []int{baseline}}
	if err := all.run(ctx, cfg, bin, filepath.Join(dir, "all"), every); err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	churn := churnJobs
	if cfg.quick {
		churn = churnJobsQuick
	}
	srv, err := retentionServer(ctx, cfg, bin, filepath.Join(dir, "server"), churn)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(os.Stderr, retentionTable(kept, all)+churnTable(srv))
	return append(retentionFigures(kept, all), churnFigures(srv)...), nil
}

// run builds the run's database checkpoint by checkpoint in dir, whose
// data/ is a server's data directory.
func (r *retentionRun) run(ctx context.Context, cfg config, bin, dir string, every int) error {
	srv, err := newScaleServer(bin, "retention1", filepath.Join(dir, "data"), filepath.Join(dir, "server.log"),
		filepath.Join(dir, "tls"), cfg.insecure)
	if err != nil {
		return err
	}
	// The server keeps what the run left: its jobs ended in 2025, which
	// the default 24 h retention would remove as soon as it leads.
	srv.extra = []string{"--job-retention", "0", "--job-retention-count", strconv.Itoa(r.keep)}
	data, err := newDataDir(srv.dataDir, srv.name, srv.raft)
	if err != nil {
		return err
	}
	f := fsm.New()
	start := time.Now()
	p := fsmscale.Params{Machines: retentionMachines, Jobs: r.jobs, Keep: r.keep, Steady: retentionSteady, CheckpointEvery: every}
	p.Checkpoint = func(st fsmscale.Stats) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		pt, err := r.measure(ctx, f, data, srv, st)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "retention: %s, %s jobs (%.0f s): %d live, heap %.0f MiB (restored %.0f), snapshot %.1f MiB, restore %.3f s%s\n",
			r.label, count(pt.jobs), time.Since(start).Seconds(), pt.live, pt.heapMiB, pt.restoredMiB, pt.snapMiB, slices.Min(pt.restores), servingText(pt))
		r.points = append(r.points, pt)
		return nil
	}
	if _, err := fsmscale.Build(f, p); err != nil {
		return fmt.Errorf("%s: %w", r.label, err)
	}
	return nil
}

// measure takes one checkpoint of f, which holds st's jobs.
func (r *retentionRun) measure(ctx context.Context, f *fsm.FSM, data *dataDir, srv *scaleServer, st fsmscale.Stats) (retentionPoint, error) {
	pt := retentionPoint{jobs: st.Jobs}
	var last uint64 // the newest job, which the restarted server is asked for
	f.Read(func(v fsm.View) {
		js := v.Jobs()
		pt.live = len(js)
		if len(js) > 0 {
			last = js[len(js)-1].ID
		}
	})
	pt.heapMiB = liveHeapMiB()
	snap, err := data.snapshot(f)
	if err != nil {
		return pt, err
	}
	pt.snapMiB, pt.snapSec = float64(snap.bytes)/(1<<20), snap.total.Seconds()
	restart := slices.Contains(r.restarts, st.Jobs)
	rounds := 1
	if restart {
		rounds = retentionRounds
	}
	for i := range rounds {
		g, took, err := data.restore()
		if err != nil {
			return pt, err
		}
		if i == 0 {
			pt.restoredMiB = liveHeapMiB() - pt.heapMiB
		}
		runtime.KeepAlive(g)
		pt.restores = append(pt.restores, took.Seconds())
	}
	if !restart {
		return pt, nil
	}
	// A fresh log: the one a former restart left belongs to another
	// history than the snapshot's.
	if err := os.Remove(filepath.Join(data.path, "raft.db")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return pt, fmt.Errorf("remove the former restart's log: %w", err)
	}
	debug.FreeOSMemory()
	for range retentionRounds {
		res, err := srv.run(ctx, last)
		if err != nil {
			return pt, err
		}
		pt.serving = append(pt.serving, res.serving.Seconds())
		pt.rss = append(pt.rss, res.rssMiB)
	}
	return pt, nil
}

// servingText is a checkpoint's restarts for the progress line.
func servingText(pt retentionPoint) string {
	if len(pt.serving) == 0 {
		return ""
	}
	return fmt.Sprintf("; server serving after %.2f s, RSS %.0f MiB", median(pt.serving), median(pt.rss))
}

// median is the median of xs.
func median(xs []float64) float64 { return summarize(xs).Median }

// retentionTable prints both runs' curves, one row per checkpoint, as
// doc/benchmark.md shows them.
func retentionTable(runs ...*retentionRun) string {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "\n%s (%s): %d machines, about %d jobs in flight\n", r.label, r.setting(), retentionMachines, retentionSteady*30)
		fmt.Fprintf(&b, "%10s %10s %10s %14s %14s %12s %12s %16s %15s\n", "jobs", "live jobs", "heap MiB", "restored MiB", "snapshot MiB", "snapshot s", "restore s", "server serving s", "server RSS MiB")
		for _, pt := range r.points {
			serving, rss := "-", "-"
			if len(pt.serving) > 0 {
				serving, rss = num(median(pt.serving)), num(median(pt.rss))
			}
			fmt.Fprintf(&b, "%10s %10d %10s %14s %14s %12s %12s %16s %15s\n", count(pt.jobs), pt.live, num(pt.heapMiB), num(pt.restoredMiB), num(pt.snapMiB),
				num(pt.snapSec), num(median(pt.restores)), serving, rss)
		}
	}
	return b.String()
}

// setting says how the run keeps finished jobs.
func (r *retentionRun) setting() string {
	if r.keep == 0 {
		return "--job-retention 0"
	}
	return fmt.Sprintf("--job-retention-count %d", r.keep)
}

// retentionFigures are the table's rows: over the retention run's
// checkpoints (the spread is the curve's: bounded means narrow), the
// restarts at its end, and the run without retention at its end.
func retentionFigures(kept, all *retentionRun) []figure {
	over := func(get func(retentionPoint) float64) summary {
		var xs []float64
		for _, pt := range kept.points {
			xs = append(xs, get(pt))
		}
		return summarize(xs)
	}
	curve := fmt.Sprintf("%s jobs with %s, %d checkpoints", count(kept.jobs), kept.setting(), len(kept.points))
	end, base := kept.points[len(kept.points)-1], all.points[len(all.points)-1]
	atEnd := fmt.Sprintf("%s, at %s jobs", kept.setting(), count(end.jobs))
	atBase := fmt.Sprintf("no retention, at %s jobs", count(base.jobs))
	note := fmt.Sprintf("live jobs, heap MiB at each checkpoint: %s; without retention: %s", curveText(kept), curveText(all))
	return []figure{
		{Name: "database jobs, " + curve, Unit: "jobs", Sample: over(func(pt retentionPoint) float64 { return float64(pt.live) }), Note: note},
		{Name: "live heap, " + curve, Unit: "MiB", Sample: over(func(pt retentionPoint) float64 { return pt.heapMiB })},
		{Name: "restored fsm heap, " + curve, Unit: "MiB", Sample: over(func(pt retentionPoint) float64 { return pt.restoredMiB })},
		{Name: "snapshot size, " + curve, Unit: "MiB", Sample: over(func(pt retentionPoint) float64 { return pt.snapMiB })},
		{Name: "restore (Open+Restore), " + curve, Unit: "s", Sample: over(func(pt retentionPoint) float64 { return median(pt.restores) })},
		{Name: "server restart->serving, " + atEnd, Unit: "s", Sample: summarize(end.serving)},
		{Name: "server RSS serving, " + atEnd, Unit: "MiB", Sample: summarize(end.rss)},
		{Name: "live heap, " + atBase, Unit: "MiB", Sample: sample(base.heapMiB)},
		{Name: "snapshot size, " + atBase, Unit: "MiB", Sample: sample(base.snapMiB)},
		{Name: "server restart->serving, " + atBase, Unit: "s", Sample: summarize(base.serving)},
		{Name: "server RSS serving, " + atBase, Unit: "MiB", Sample: summarize(base.rss)},
	}
}

// curveText is a run's curve in one line: "100k 10307/21, 200k ...".
func curveText(r *retentionRun) string {
	parts := make([]string, len(r.points))
	for i, pt := range r.points {
		parts[i] = fmt.Sprintf("%s %d/%.0f", count(pt.jobs), pt.live, pt.heapMiB)
	}
	return strings.Join(parts, ", ")
}
