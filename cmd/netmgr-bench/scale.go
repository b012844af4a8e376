package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// The scale suite's sizes: the 10,000 machines and 1,000,000 job
// records, a tenth of each when quick.
const (
	scaleMachines      = 10_000
	scaleJobs          = 1_000_000
	scaleMachinesQuick = 1_000
	scaleJobsQuick     = 100_000
	// scaleRounds is how often snapshot, restore and restart are each
	// measured.
	scaleRounds      = 3
	scaleRoundsQuick = 2
	// scaleServerName is the name of the group's one server.
	scaleServerName = "scale1"
)

// scaleSuite measures a simulated pool of thousands of machines
// (scale_pool.go), then a database of 10,000 machines and 1,000,000 jobs.
// The database part builds a database of 10,000 machines and 1,000,000 jobs
// through the real FSM, persists its snapshot into a server data
// directory through raft's file snapshot store, takes it again under the
// traffic of a serving leader (snapshotUnderLoad: how long renewals,
// reads and submits wait while it runs), restores it in process,
// then starts a real `netmgr server` on that directory and measures the
// time to its first consistent read and its memory.
func scaleSuite(ctx context.Context, cfg config) ([]figure, error) {
	pool, err := scalePoolSuite(ctx, cfg) // scale_pool.go
	if err != nil {
		return nil, err
	}
	figs, err := scaleStoreSuite(ctx, cfg)
	return append(pool, figs...), err
}

// scaleStoreSuite is the scale suite's database part.
func scaleStoreSuite(ctx context.Context, cfg config) ([]figure, error) {
	machines, jobs, rounds := scaleMachines, scaleJobs, scaleRounds
	if cfg.quick {
		machines, jobs, rounds = scaleMachinesQuick, scaleJobsQuick, scaleRoundsQuick
	}
	dir, bin, cleanup, err := benchSetup(cfg, "scale")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	srv, err := newScaleServer(bin, scaleServerName, filepath.Join(dir, "data"), filepath.Join(dir, "server.log"),
		filepath.Join(dir, "tls"), cfg.insecure)
	if err != nil {
		return nil, err
	}
	// The built jobs ended in 2025: under the default retention the
	// server, once leader, would remove nearly all of them while it is
	// measured.
	srv.extra = []string{"--job-retention", "0", "--job-retention-count", "0"}
	data, err := newDataDir(srv.dataDir, srv.name, srv.raft)
	if err != nil {
		return nil, err
	}
	size := fmt.Sprintf("%dk machines, %s jobs", machines/1000, count(jobs))

	b, err := buildAndSnapshot(ctx, data, fsmscale.Params{Machines: machines, Jobs: jobs}, rounds)
	if err != nil {
		return nil, err
	}
	debug.FreeOSMemory() // only the snapshot file now: the restores' memory is their own

	var restoreTimes []float64
	var restoredHeap float64
	for i := range rounds {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		g, took, err := data.restore()
		if err != nil {
			return nil, err
		}
		restoredHeap = liveHeapMiB()
		runtime.KeepAlive(g)
		fmt.Fprintf(os.Stderr, "scale: restore %d: %.2f s, %.0f MiB live heap\n", i+1, took.Seconds(), restoredHeap)
		restoreTimes = append(restoreTimes, took.Seconds())
	}
	debug.FreeOSMemory()

	var serving, rss, peak []float64
	for i := range rounds {
		r, err := srv.run(ctx, uint64(b.stats.Jobs))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "scale: restart %d: serving after %.2f s, RSS %.0f MiB (peak %.0f MiB)\n",
			i+1, r.serving.Seconds(), r.rssMiB, r.peakRSSMiB)
		serving = append(serving, r.serving.Seconds())
		rss = append(rss, r.rssMiB)
		peak = append(peak, r.peakRSSMiB)
	}

	note := fmt.Sprintf("scale: %s (%d instances, %d commands applied in %.0f s), fsm live heap %.0f MiB "+
		"(%.0f MiB restored, %.2f KiB per job); snapshot %d bytes; %d rounds on a shared machine",
		size, b.stats.Instances, b.stats.Index, b.took.Seconds(), b.heapMiB, restoredHeap, restoredHeap*1024/float64(jobs), b.bytes, rounds)
	return []figure{
		{Name: "snapshot size, " + size, Unit: "MiB", Sample: sample(float64(b.bytes) / (1 << 20))},
		{Name: "snapshot (Snapshot+Persist), " + size, Unit: "s", Sample: summarize(b.snapshots)},
		{Name: "snapshot under lock (Snapshot), " + size, Unit: "s", Sample: summarize(b.locked)},
		{Name: "lease renewal (fsm.Read) during a snapshot, p99, " + size, Unit: "ms", Sample: summarize(b.stall.renew), Target: "<= 50 ms"},
		{Name: "job read during a snapshot, p99, " + size, Unit: "ms", Sample: summarize(b.stall.read), Target: "<= 50 ms"},
		{Name: "submit applied during a snapshot, p99, " + size, Unit: "ms", Sample: summarize(b.stall.submit), Target: "<= 50 ms"},
		{Name: "slowest request during a snapshot, " + size, Unit: "ms", Sample: summarize(b.stall.worst)},
		{Name: "lease renewal (fsm.Read), p99, the same traffic without a snapshot, " + size, Unit: "ms", Sample: summarize(b.stall.baseRenew)},
		{Name: "submit applied, p99, the same traffic without a snapshot, " + size, Unit: "ms", Sample: summarize(b.stall.baseSubmit)},
		{Name: "snapshot under traffic (Snapshot+Persist), " + size, Unit: "s", Sample: summarize(b.stall.total)},
		{Name: "restore (Open+Restore), " + size, Unit: "s", Sample: summarize(restoreTimes)},
		{Name: "server restart->serving, " + size, Unit: "s", Sample: summarize(serving), Target: "<= 10 s"},
		{Name: "server RSS serving, " + size, Unit: "MiB", Sample: summarize(rss), Target: "<= 4096 MiB"},
		{Name: "server peak RSS, " + size, Unit: "MiB", Sample: summarize(peak), Note: note},
	}, nil
}

// built is what buildAndSnapshot made and measured.
type built struct {
	stats     fsmscale.Stats
	took      time.Duration // applying the commands
	heapMiB   float64       // the live heap holding the built FSM
	snapshots []float64     // seconds per Snapshot+Persist
	locked    []float64     // seconds per Snapshot, under the FSM's lock
	bytes     int64         // size of the snapshot file
	stall     stallRounds   // the snapshots taken under traffic
}

// stallRounds is what the snapshots under traffic measured, a value per
// round: each kind of request's p99 over the snapshot in ms, the slowest
// request of any kind, and the snapshot's own time in s.
type stallRounds struct {
	renew, read, submit, worst, total []float64
	// baseRenew and baseSubmit are the p99s of the same traffic without
	// a snapshot, right after each.
	baseRenew, baseSubmit []float64
}

// buildAndSnapshot applies the commands of a database of p's size to a
// new FSM and persists its snapshot into data rounds times. The FSM is
// garbage once it returns.
func buildAndSnapshot(ctx context.Context, data *dataDir, p fsmscale.Params, rounds int) (built, error) {
	size := fmt.Sprintf("%d machines and %d jobs", p.Machines, p.Jobs)
	fmt.Fprintf(os.Stderr, "scale: applying the commands of %s to an fsm ...\n", size)
	start := time.Now()
	p.Progress = func(n int) {
		fmt.Fprintf(os.Stderr, "scale: %d jobs applied (%.0f s)\n", n, time.Since(start).Seconds())
	}
	f := fsm.New()
	st, err := fsmscale.Build(f, p)
	if err != nil {
		return built{}, err
	}
	b := built{stats: st, took: time.Since(start), heapMiB: liveHeapMiB()}
	for i := range rounds {
		if ctx.Err() != nil {
			return built{}, ctx.Err()
		}
		st, err := data.snapshot(f)
		if err != nil {
			return built{}, err
		}
		fmt.Fprintf(os.Stderr, "scale: snapshot %d: %.0f MiB in %.2f s (%.2f s locked)\n",
			i+1, float64(st.bytes)/(1<<20), st.total.Seconds(), st.locked.Seconds())
		b.snapshots = append(b.snapshots, st.total.Seconds())
		b.locked = append(b.locked, st.locked.Seconds())
		b.bytes = st.bytes
	}
	if err := stallSnapshots(ctx, f, data, &b, rounds); err != nil {
		return built{}, err
	}
	return b, nil
}

// stallSnapshots takes rounds snapshots of f under traffic
// (snapshotUnderLoad) and records what they measured in b.
func stallSnapshots(ctx context.Context, f *fsm.FSM, data *dataDir, b *built, rounds int) error {
	var machines []string
	var firstLive uint64
	jobs := uint64(b.stats.Jobs)
	f.Read(func(v fsm.View) {
		for _, m := range v.Machines() {
			machines = append(machines, m.Name)
		}
		firstLive = jobs
		for firstLive > 1 {
			if j, ok := v.Job(firstLive - 1); !ok || j.State() != fsm.JobRunning && j.State() != fsm.JobQueued {
				break
			}
			firstLive--
		}
	})
	index := b.stats.Index
	p99 := func(xs []float64) float64 { return summarize(xs).P99 }
	for i := range rounds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		runtime.GC() // the previous round's garbage is not this one's cost
		st, next, err := snapshotUnderLoad(f, data, machines, jobs, firstLive, index, 0)
		if err != nil {
			return err
		}
		// The same traffic as long without a snapshot: what the machine's
		// load (other work on a shared box) costs it alone.
		base, next, err := snapshotUnderLoad(f, data, machines, jobs, firstLive, next, st.snap.total)
		if err != nil {
			return err
		}
		index = next
		worst := max(summarize(st.renew).Max, summarize(st.read).Max, summarize(st.submit).Max)
		fmt.Fprintf(os.Stderr, "scale: snapshot under traffic %d: %.2f s (%.3f s in Snapshot); p99 renewal %.1f ms (%d), read %.1f ms (%d), submit %.1f ms (%d); slowest %.1f ms; "+
			"without a snapshot: p99 renewal %.1f ms, read %.1f ms, submit %.1f ms; load %s\n",
			i+1, st.snap.total.Seconds(), st.snap.locked.Seconds(), p99(st.renew), len(st.renew), p99(st.read), len(st.read),
			p99(st.submit), len(st.submit), worst, p99(base.renew), p99(base.read), p99(base.submit), loadAverage())
		b.stall.baseRenew = append(b.stall.baseRenew, p99(base.renew))
		b.stall.baseSubmit = append(b.stall.baseSubmit, p99(base.submit))
		b.stall.renew = append(b.stall.renew, p99(st.renew))
		b.stall.read = append(b.stall.read, p99(st.read))
		b.stall.submit = append(b.stall.submit, p99(st.submit))
		b.stall.worst = append(b.stall.worst, worst)
		b.stall.total = append(b.stall.total, st.snap.total.Seconds())
	}
	return nil
}

// count prints n as 100k or 1M, or whole when it is not thousands.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 != 0:
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%dk", n/1000)
}
