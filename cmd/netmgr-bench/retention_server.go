package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
)

// The retention suite's real-server part: one server with a short
// --job-retention and simulated stubs whose jobs end at once, fed until
// churnJobs jobs have ended, the server's memory and files sampled
// churnSamples times on the way.
const (
	churnJobs      = 100_000
	churnJobsQuick = 5_000
	churnSamples   = 10
	churnRetention = 2 * time.Second
	churnStubs     = 10
	churnSlots     = 64
	churnRunTime   = 10 * time.Millisecond
	churnClients   = 32
)

// churnPoint is one sample of the server under churn.
type churnPoint struct {
	jobs   int // ended so far
	live   int // jobs the server lists
	rssMiB float64
	// anonMiB is the RSS less the mapped files (raft.db above all).
	anonMiB float64
	heapMiB float64 // go_memstats_heap_alloc_bytes: live and garbage
	raftMiB float64 // raft.db
	snapMiB float64 // the snapshots directory
}

// churnRun is what the real-server part measured.
type churnRun struct {
	jobs    int
	took    time.Duration
	points  []churnPoint
	settled churnPoint // once the last job is past the retention
	restart time.Duration
	// restartRSS and restartAnon are the server's RSS, and its RSS less
	// the mapped files, once it serves again.
	restartRSS, restartAnon float64
	errors                  int
	lastErr                 string
}

// retentionServer runs one real server (--job-retention 2s) with 10
// simulated stubs and 32 clients that each submit a job and wait for it
// to end, until jobs have ended, sampling the server's RSS, heap, live
// jobs and Raft files; then waits for the retention to empty the
// database and restarts the server on its data directory.
func retentionServer(ctx context.Context, cfg config, bin, dir string, jobs int) (*churnRun, error) {
	fmt.Fprintf(os.Stderr, "retention: 1 server (--job-retention %v) and %d simulated stubs, %d jobs ...\n", churnRetention, churnStubs, jobs)
	c, err := startClusterArgs(cfg, bin, filepath.Join(dir, "cluster"), 1, 0, []string{"--job-retention", churnRetention.String()})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	var sims []*simProc
	defer func() { stopSims(sims) }()
	fail := func(err error) (*churnRun, error) {
		fmt.Fprintf(os.Stderr, "process logs:\n%s%s", c.Logs(3000), simLogs(sims, 3000))
		return nil, err
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return fail(err)
	}
	sim, err := startSim(c, bin, dir, "churn", churnStubs, "--slots", strconv.Itoa(churnSlots), "--run-time", churnRunTime.String())
	if err != nil {
		return fail(err)
	}
	sims = append(sims, sim)
	if err := c.WaitMachines(churnStubs, 120*time.Second); err != nil {
		return fail(err)
	}
	cl, err := userClient(c)
	if err != nil {
		return fail(err)
	}
	srv := c.Servers[0]
	sample := func(ended int) (churnPoint, error) {
		pt := churnPoint{jobs: ended}
		sctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		js, err := cl.Jobs(sctx)
		if err != nil {
			return pt, fmt.Errorf("list jobs: %w", err)
		}
		pt.live = len(js)
		mem, err := procMemory(srv.PID())
		if err != nil {
			return pt, err
		}
		pt.rssMiB, pt.anonMiB = mem["VmRSS"], mem["RssAnon"]
		m, err := scrapeMetrics(sctx, c.HTTPClient(), srv.URL()+"/metrics")
		if err != nil {
			return pt, err
		}
		pt.heapMiB = m["go_memstats_heap_alloc_bytes"] / (1 << 20)
		pt.raftMiB = fileMiB(filepath.Join(srv.DataDir, "raft.db"))
		pt.snapMiB = fileMiB(filepath.Join(srv.DataDir, "snapshots"))
		return pt, nil
	}

	run := &churnRun{jobs: jobs}
	job := trueBinary()
	var (
		submitted, ended atomic.Int64
		mu               sync.Mutex // guards run's errors and lastErr
		wg               sync.WaitGroup
	)
	start := time.Now()
	for range churnClients {
		wg.Go(func() {
			for submitted.Add(1) <= int64(jobs) && ctx.Err() == nil {
				if err := submitEnded(ctx, cl, job); err != nil {
					mu.Lock()
					run.errors++
					run.lastErr = err.Error()
					mu.Unlock()
				}
				ended.Add(1)
			}
		})
	}
	every := jobs / churnSamples
	for next := every; next <= jobs; next += every {
		for ended.Load() < int64(next) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond) // a progress check, not a wait for a condition's outcome
		}
		if ctx.Err() != nil {
			break
		}
		pt, err := sample(next)
		if err != nil {
			wg.Wait()
			return fail(err)
		}
		fmt.Fprintf(os.Stderr, "retention: server, %s jobs ended (%.0f s): %d live, RSS %.0f MiB (anonymous %.0f), heap %.0f MiB, raft.db %.1f MiB, snapshots %.1f MiB\n",
			count(pt.jobs), time.Since(start).Seconds(), pt.live, pt.rssMiB, pt.anonMiB, pt.heapMiB, pt.raftMiB, pt.snapMiB)
		run.points = append(run.points, pt)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	run.took = time.Since(start)
	if run.errors > jobs/100 {
		return fail(fmt.Errorf("retention server: %d of %d jobs failed (last: %s)", run.errors, jobs, run.lastErr))
	}

	// Every job is past the retention a few looks later.
	deadline := time.Now().Add(10*churnRetention + 30*time.Second)
	for {
		pt, err := sample(jobs)
		if err != nil {
			return fail(err)
		}
		if pt.live == 0 || time.Now().After(deadline) {
			run.settled = pt
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(churnRetention / 4):
		}
	}
	fmt.Fprintf(os.Stderr, "retention: server settled: %d live, RSS %.0f MiB (anonymous %.0f), heap %.0f MiB\n",
		run.settled.live, run.settled.rssMiB, run.settled.anonMiB, run.settled.heapMiB)

	// A restart on the data directory: snapshot and log replay.
	if err := c.KillServer(0, syscall.SIGTERM); err != nil {
		return fail(err)
	}
	restart := time.Now()
	if err := c.RestartServer(0); err != nil {
		return fail(err)
	}
	if err := servingAgain(ctx, cl); err != nil {
		return fail(err)
	}
	run.restart = time.Since(restart)
	mem, err := procMemory(srv.PID())
	if err != nil {
		return fail(err)
	}
	run.restartRSS, run.restartAnon = mem["VmRSS"], mem["RssAnon"]
	fmt.Fprintf(os.Stderr, "retention: server restarted, serving after %.2f s, RSS %.0f MiB (anonymous %.0f)\n",
		run.restart.Seconds(), run.restartRSS, run.restartAnon)
	return run, nil
}

// submitEnded submits one single-instance job of bin and waits for it to
// end.
func submitEnded(ctx context.Context, cl *client.Client, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: bin}, Min: 1}})
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if _, err := cl.WaitJob(ctx, strconv.FormatUint(sub.ID, 10), client.WaitDone); err != nil {
		return fmt.Errorf("wait for job %d: %w", sub.ID, err)
	}
	return nil
}

// servingAgain polls until the restarted server answers a consistent
// read.
func servingAgain(ctx context.Context, cl *client.Client) error {
	deadline := time.Now().Add(serveTimeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cl.Jobs(rctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v: %v", errNotServing, serveTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// fileMiB is the size of a file, or of the files under a directory, in
// MiB; 0 when there is none.
func fileMiB(path string) float64 {
	var n int64
	_ = filepath.Walk(path, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return float64(n) / (1 << 20)
}

// churnTable prints the real server's curve, as doc/benchmark.md shows it.
func churnTable(r *churnRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n1 server (--job-retention %v), %d simulated stubs, %d clients each waiting for its job's end: %d jobs in %.0f s\n",
		churnRetention, churnStubs, churnClients, r.jobs, r.took.Seconds())
	fmt.Fprintf(&b, "%10s %10s %10s %10s %10s %12s %14s\n", "ended", "live jobs", "RSS MiB", "anon MiB", "heap MiB", "raft.db MiB", "snapshots MiB")
	row := func(label string, pt churnPoint) {
		fmt.Fprintf(&b, "%10s %10d %10s %10s %10s %12s %14s\n", label, pt.live, num(pt.rssMiB), num(pt.anonMiB), num(pt.heapMiB), num(pt.raftMiB), num(pt.snapMiB))
	}
	for _, pt := range r.points {
		row(count(pt.jobs), pt)
	}
	row("settled", r.settled)
	fmt.Fprintf(&b, "restarted on its data directory: serving after %.2f s, RSS %.0f MiB (anonymous %.0f)\n",
		r.restart.Seconds(), r.restartRSS, r.restartAnon)
	return b.String()
}

// churnFigures are the real server's rows: over its samples (bounded
// means a narrow spread), once settled, and its restart.
func churnFigures(r *churnRun) []figure {
	over := func(get func(churnPoint) float64) summary {
		var xs []float64
		for _, pt := range r.points {
			xs = append(xs, get(pt))
		}
		return summarize(xs)
	}
	name := fmt.Sprintf("server, %s jobs with --job-retention %v, %d samples", count(r.jobs), churnRetention, len(r.points))
	parts := make([]string, len(r.points))
	for i, pt := range r.points {
		parts[i] = fmt.Sprintf("%s %d/%.0f/%.0f", count(pt.jobs), pt.live, pt.rssMiB, pt.anonMiB)
	}
	note := fmt.Sprintf("1 server, %d simulated stubs (%v jobs), %d clients each waiting for its job's end, %d jobs in %.0f s; "+
		"live jobs/RSS/anonymous RSS MiB: %s; settled %d/%.0f/%.0f", churnStubs, churnRunTime, churnClients, r.jobs, r.took.Seconds(),
		strings.Join(parts, ", "), r.settled.live, r.settled.rssMiB, r.settled.anonMiB)
	if r.errors > 0 {
		note += fmt.Sprintf("; %d errors (last: %s)", r.errors, r.lastErr)
	}
	return []figure{
		{Name: "live jobs, " + name, Unit: "jobs", Sample: over(func(pt churnPoint) float64 { return float64(pt.live) }), Note: note},
		{Name: "RSS, " + name, Unit: "MiB", Sample: over(func(pt churnPoint) float64 { return pt.rssMiB })},
		{Name: "anonymous RSS (no mapped file), " + name, Unit: "MiB", Sample: over(func(pt churnPoint) float64 { return pt.anonMiB })},
		{Name: "raft.db, " + name, Unit: "MiB", Sample: over(func(pt churnPoint) float64 { return pt.raftMiB })},
		{Name: fmt.Sprintf("server restart->serving, after %s jobs with --job-retention %v", count(r.jobs), churnRetention), Unit: "s",
			Sample: sample(r.restart.Seconds())},
	}
}
