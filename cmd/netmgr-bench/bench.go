package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// config is the benchmark's parameters.
type config struct {
	bin           string
	servers       int
	stubs         int
	n             int
	concurrency   int
	duration      time.Duration
	json          bool
	keep          bool
	quick         bool          // BENCH_QUICK: shorter runs, fewer samples
	only          string        // comma-separated suite names; "" runs all
	insecure      bool          // every cluster runs without TLS (-insecure)
	allocRounds   int           // rounds of the alloc suite; 0 is its default
	scalePool     string        // the scale suite's pool sizes (-scale-pool); "" is its default
	scaleSteady   time.Duration // the scale suite's steady window (-scale-steady); 0 is its default
	scaleJoinRate float64       // machines a second joining a pool over scalePoolPacedOver (-scale-join-rate)
	// sitePolicy is a Starlark site policy script (-site-policy) every
	// cluster installs once ready, so the core figures can be taken with
	// a script's admit and priority in the way; "" for none.
	sitePolicy string
}

// defaultConfig returns the defaults, shortened when quick.
func defaultConfig(quick bool) config {
	c := config{servers: 3, stubs: 2, n: 300, concurrency: 32, duration: 10 * time.Second, quick: quick}
	if quick {
		c.n = 60
		c.duration = 3 * time.Second
	}
	return c
}

// opTimeout bounds one submit-and-wait.
const opTimeout = 60 * time.Second

// warmup jobs run before measuring, so connections, the leader's caches
// and the stubs' first fork are not in the figures.
const warmup = 5

// latencySuite measures submit->registered latency and throughput with
// real forks on a process cluster.
func latencySuite(ctx context.Context, cfg config) ([]figure, error) {
	res, err := bench(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return res.figures(), nil
}

// benchDir makes the directory a suite's cluster lives in, and returns
// a function that marks it for removal once every suite has run (see
// removeDirs), unless -keep was given.
func benchDir(cfg config, suite string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "netmgr-bench-"+suite+"-")
	if err != nil {
		return "", nil, fmt.Errorf("bench %s: %w", suite, err)
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "%s: cluster data and logs in %s\n", suite, dir)
		return dir, func() {}, nil
	}
	return dir, func() {
		doneDirsMu.Lock()
		defer doneDirsMu.Unlock()
		doneDirs = append(doneDirs, dir)
	}, nil
}

// doneDirs are the directories of suites that have run, removed at the
// end of the run: on ext4 without a journal, for a minute or more after
// many files are deleted, each new inode in their block group is found
// only after a scan past the deleted ones (recently_deleted). A suite
// that ran right after another's removal forked half as fast (372
// instances a second against 575 for the same build with none).
var (
	doneDirsMu sync.Mutex
	doneDirs   []string
)

// removeDirs removes doneDirs.
func removeDirs() {
	doneDirsMu.Lock()
	defer doneDirsMu.Unlock()
	for _, dir := range doneDirs {
		_ = os.RemoveAll(dir)
	}
	doneDirs = nil
}

// benchSetup makes a suite's bench directory (benchDir) and finds or
// builds the netmgr binary it runs (netmgrBinary); cleanup, which the
// caller defers, files the directory for removal.
func benchSetup(cfg config, suite string) (dir, bin string, cleanup func(), err error) {
	dir, cleanup, err = benchDir(cfg, suite)
	if err != nil {
		return "", "", nil, err
	}
	if bin, err = netmgrBinary(cfg, dir); err != nil {
		cleanup()
		return "", "", nil, err
	}
	return dir, bin, cleanup, nil
}

// netmgrBinary returns the absolute path of the netmgr binary to run,
// building it into dir when -netmgr was not given.
func netmgrBinary(cfg config, dir string) (string, error) {
	if cfg.bin == "" {
		fmt.Fprintln(os.Stderr, "building netmgr ...")
		return servertest.BuildBinary(dir)
	}
	bin, err := filepath.Abs(cfg.bin)
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return bin, nil
}

// bench starts the cluster, runs both phases and stops the cluster.
func bench(ctx context.Context, cfg config) (*results, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "latency")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "latency", servers: cfg.servers, stubs: cfg.stubs}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) (*results, error) {
		return benchOn(ctx, cfg, c, cl)
	})
}

// benchOn runs bench's phases on c, a ready cluster, through cl.
func benchOn(ctx context.Context, cfg config, c *servertest.ProcCluster, cl *client.Client) (*results, error) {
	job := trueBinary()

	res := &results{
		CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Servers: cfg.servers, Stubs: cfg.stubs, Binary: job,
		Concurrency: cfg.concurrency,
	}
	for range warmup {
		if _, err := submitAndWait(ctx, cl, job, 1); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}

	before, berr := stageSums(ctx, c)
	fmt.Fprintf(os.Stderr, "latency: %d sequential jobs ...\n", cfg.n)
	seq := make([]time.Duration, 0, cfg.n)
	for range cfg.n {
		d, err := submitAndWait(ctx, cl, job, 1)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Errors++
			res.LastError = err.Error()
			continue
		}
		seq = append(seq, d)
	}
	res.Sequential = summarize(ms(seq))
	if after, err := stageSums(ctx, c); berr == nil && err == nil {
		res.Stages = breakdown(before, after)
	}

	fmt.Fprintf(os.Stderr, "throughput: %d submitters for %v ...\n", cfg.concurrency, cfg.duration)
	if err := liftSlots(ctx, cl, c); err != nil {
		return nil, err
	}
	tp, err := throughput(ctx, cl, job, cfg.concurrency, cfg.duration)
	if err != nil {
		return nil, err
	}
	res.Loaded = summarize(ms(tp.latencies))
	res.Windows = summarize(tp.windows)
	res.Jobs = len(tp.latencies)
	res.Seconds = tp.elapsed.Seconds()
	if res.Seconds > 0 {
		res.JobsPerSec = float64(res.Jobs) / res.Seconds
	}
	res.Errors += tp.errors
	if tp.lastErr != "" {
		res.LastError = tp.lastErr
	}
	if len(seq) == 0 || res.Jobs == 0 {
		return nil, fmt.Errorf("no job completed: %s", res.LastError)
	}

	// The submitted jobs must not run: forking hundreds of supervisors a
	// second would measure the machines, not the servers' acceptance.
	// Dropping the stubs' declarations drains them, so every job queues.
	dctx, cancel := context.WithTimeout(ctx, opTimeout)
	_, err = cl.LoadDatabase(dctx, client.DatabaseText{Filename: "drain.db", Text: benchDatabase})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("drain the stubs before the submit rate: %w", err)
	}
	fmt.Fprintf(os.Stderr, "submit rate: %d clients for %v ...\n", submitClients, cfg.duration)
	var errs int
	var lastErr string
	res.SubmitWindows, res.Submitted, errs, lastErr = submitRate(ctx, cl, job, submitClients, cfg.duration)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Errors += errs
	if lastErr != "" {
		res.LastError = lastErr
	}
	return res, nil
}

// submitAndWait submits one job of bin with n instances and returns how
// long it took until WaitJob(started) answered: every instance registered.
func submitAndWait(ctx context.Context, cl *client.Client, bin string, n int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	start := time.Now()
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: bin},
		Min:      n,
	}})
	if err != nil {
		return 0, fmt.Errorf("submit: %w", err)
	}
	if _, err := cl.WaitJob(ctx, strconv.FormatUint(sub.ID, 10), client.WaitStarted); err != nil {
		return 0, fmt.Errorf("wait for job %d: %w", sub.ID, err)
	}
	return time.Since(start), nil
}

// tpInstances is the number of instances of each job of the throughput
// phase: the figure is instances started per second, and a job of several
// instances is placed in one Place command, as a user's would be.
const tpInstances = 10

// benchDatabase starts every database the benchmark loads. Its jobs run
// as the user running it, root where it runs as root; a secure cluster
// runs root's jobs (submitted from a pool machine) only where the
// database allows them. Insecure clusters load the same text.
const benchDatabase = "allow_root_jobs\n"

// benchSlots is the slot count (nprocs) liftSlots gives every stub.
const benchSlots = 256

// liftSlots loads a database that gives every stub benchSlots slots, so
// that the throughput phase measures how fast instances start rather than
// how many slots two 2-core machines have: /bin/true needs no CPU of its
// own.
func liftSlots(ctx context.Context, cl *client.Client, c *servertest.ProcCluster) error {
	var db strings.Builder
	db.WriteString(benchDatabase)
	for _, st := range c.Stubs {
		fmt.Fprintf(&db, "machine %s = {nprocs=%d}\n", st.Name, benchSlots)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := cl.LoadDatabase(ctx, client.DatabaseText{Filename: "bench.db", Text: db.String()}); err != nil {
		return fmt.Errorf("give the stubs %d slots: %w", benchSlots, err)
	}
	return nil
}

// tpResult is what the throughput phase measured.
type tpResult struct {
	latencies []time.Duration // one per completed job
	windows   []float64       // jobs completed in each whole 1 s window
	elapsed   time.Duration   // from start until the last submitter returned
	errors    int
	lastErr   string
}

// throughput runs conc submitters until d has passed and collects every
// completion time.
func throughput(ctx context.Context, cl *client.Client, bin string, conc int, d time.Duration) (tpResult, error) {
	type done struct {
		at  time.Duration // completion, since start
		lat time.Duration
		err error
	}
	start := time.Now()
	deadline := start.Add(d)
	var (
		mu  sync.Mutex // guards all
		all []done
		wg  sync.WaitGroup
	)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				lat, err := submitAndWait(ctx, cl, bin, tpInstances)
				mu.Lock()
				all = append(all, done{at: time.Since(start), lat: lat, err: err})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return tpResult{}, err
	}
	r := tpResult{elapsed: time.Since(start)}
	// Whole 1 s windows up to the last completion: the submitters stop
	// submitting at d, and what they had in flight still starts.
	nwin := max(int(r.elapsed/time.Second), 1)
	counts := make([]float64, nwin)
	for _, x := range all {
		if x.err != nil {
			r.errors++
			r.lastErr = x.err.Error()
			continue
		}
		r.latencies = append(r.latencies, x.lat)
		if w := int(x.at / time.Second); w < nwin {
			counts[w] += tpInstances
		}
	}
	r.windows = counts
	if len(r.latencies) == 0 && r.errors > 0 {
		return r, errors.New("throughput: every job failed: " + r.lastErr)
	}
	return r, nil
}

// trueBinary returns the path of a command that exits at once.
func trueBinary() string {
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/bin/true"
}

// ms converts durations to milliseconds.
func ms(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}
