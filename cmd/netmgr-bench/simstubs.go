package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/server/servertest"
)

// The simstubs suite's setup: 100 simulated stubs in simProcs processes, each
// with simSlots slots, whose jobs run simRunTime; simClients submitters
// each submit jobs of simJobSize instances and wait for them to start.
const (
	simStubs   = 100
	simProcs   = 4 // the processes the simulated stubs are spread over
	simSlots   = 32
	simRunTime = 500 * time.Millisecond
	simClients = 64
	simJobSize = 20
	// simGOGC is the sim processes' GOGC.
	simGOGC = "400"
)

// simStubsSuite measures how many instances a 3-server group starts per
// second when 100 simulated stubs (no fork) run them.
func simStubsSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "simstubs")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	fmt.Fprintf(os.Stderr, "simstubs: starting 3 servers and %d simulated stubs ...\n", simStubs)
	c, err := startCluster(cfg, bin, filepath.Join(dir, "cluster"), 3, 0)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	var sims []*simProc
	defer func() { stopSims(sims) }()
	fail := func(err error) ([]figure, error) {
		fmt.Fprintf(os.Stderr, "process logs:\n%s%s", c.Logs(3000), simLogs(sims, 3000))
		return nil, err
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return fail(err)
	}
	for i := range simProcs {
		sim, err := startSim(c, bin, dir, "sim"+strconv.Itoa(i), simStubs/simProcs,
			"--slots", strconv.Itoa(simSlots), "--run-time", simRunTime.String())
		if err != nil {
			return fail(err)
		}
		sims = append(sims, sim)
	}
	if err := c.WaitMachines(simStubs, 120*time.Second); err != nil {
		return fail(err)
	}
	cl, err := userClient(c)
	if err != nil {
		return fail(err)
	}
	job := trueBinary()
	for range warmup {
		if _, _, err := submitStarted(ctx, cl, job, simJobSize); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}

	d := cfg.duration
	leader, _ := c.Leader()
	procs := map[string]int{"bench": os.Getpid()}
	for i, s := range sims {
		procs["sim"+strconv.Itoa(i)] = s.pid()
	}
	for i, s := range c.Servers {
		role := "follower"
		if i == leader {
			role = "leader"
		}
		procs[role+" "+s.Name] = s.PID()
	}
	fmt.Fprintf(os.Stderr, "simstubs: %d submitters of %d-instance jobs for %v; processes %v ...\n", simClients, simJobSize, d, procs)
	cpu := startCPU(procs)
	res := loadStarts(ctx, cl, job, d)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	cores := cpu.cores()
	if len(res.ids) == 0 {
		return fail(fmt.Errorf("simstubs: no job started: %s", res.lastErr))
	}
	started, err := startTimes(ctx, cl, res.ids)
	if err != nil {
		return fail(err)
	}
	windows := perWindow(started, res.start, d)
	note := fmt.Sprintf("3 servers (disk), %d simulated stubs in %d processes (outboxes in %s), %d slots each, jobs run %v; "+
		"%d submitters of %d-instance jobs, each waiting for its job to start; %d instances started in %.1f s",
		simStubs, simProcs, simDataRoot(dir), simSlots, simRunTime, simClients, simJobSize, len(started), res.elapsed.Seconds())
	if res.errors > 0 {
		note += fmt.Sprintf("; %d errors (last: %s)", res.errors, res.lastErr)
	}
	note += "; CPU during the load (cores): " + cores
	return []figure{
		{
			Name: "instances started/s, 100 simulated stubs (no fork), 1 s windows", Unit: "inst/s",
			Sample: summarize(windows), Target: ">= 3000", Note: note,
		},
		{
			Name: fmt.Sprintf("submit->all %d started under that load", simJobSize), Unit: "ms",
			Sample: summarize(ms(res.latencies)),
		},
	}, nil
}

// loadResult is what loadStarts measured.
type loadResult struct {
	start     time.Time
	elapsed   time.Duration
	ids       []uint64        // jobs submitted and started
	latencies []time.Duration // submit until every instance started, per job
	errors    int
	lastErr   string
}

// loadStarts runs simClients submitters for d, each submitting a job of
// simJobSize instances and waiting for all of them to start.
func loadStarts(ctx context.Context, cl *client.Client, bin string, d time.Duration) loadResult {
	res := loadResult{start: time.Now()}
	deadline := res.start.Add(d)
	var (
		mu sync.Mutex // guards res
		wg sync.WaitGroup
	)
	for range simClients {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				id, lat, err := submitStarted(ctx, cl, bin, simJobSize)
				mu.Lock()
				if err != nil {
					res.errors++
					res.lastErr = err.Error()
				} else {
					res.ids = append(res.ids, id)
					res.latencies = append(res.latencies, lat)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(res.start)
	return res
}

// submitStarted submits a job of n instances of bin and waits until every
// instance has registered; it returns the job's id and how long that took.
func submitStarted(ctx context.Context, cl *client.Client, bin string, n int) (uint64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	start := time.Now()
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: bin},
		Min:      n,
	}})
	if err != nil {
		return 0, 0, fmt.Errorf("submit: %w", err)
	}
	if _, err := cl.WaitJob(ctx, strconv.FormatUint(sub.ID, 10), client.WaitStarted); err != nil {
		return 0, 0, fmt.Errorf("wait for job %d: %w", sub.ID, err)
	}
	return sub.ID, time.Since(start), nil
}

// startTimes returns when each instance of the jobs ids registered, as
// the servers recorded it (the stub's CHILD_REGISTER time).
func startTimes(ctx context.Context, cl *client.Client, ids []uint64) ([]time.Time, error) {
	want := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	jobs, err := cl.Jobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []time.Time
	for _, j := range jobs {
		if !want[j.ID] {
			continue
		}
		for _, in := range j.Instances {
			if !in.StartedAt.IsZero() {
				out = append(out, in.StartedAt)
			}
		}
	}
	return out, nil
}

// perWindow counts the times in each whole 1 s window from start to
// start+d; times outside are left out.
func perWindow(times []time.Time, start time.Time, d time.Duration) []float64 {
	n := int(d / time.Second)
	if n < 1 {
		return nil
	}
	counts := make([]float64, n)
	for _, t := range times {
		if off := t.Sub(start); off >= 0 {
			if w := int(off / time.Second); w < n {
				counts[w]++
			}
		}
	}
	return counts
}

// gossipAddrs returns the servers' gossip addresses.
func gossipAddrs(c *servertest.ProcCluster) []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.GossipAddr)
	}
	return out
}

// simProc is one `netmgr sim` process.
type simProc struct {
	cmd   *exec.Cmd
	log   string        // its stdout and stderr
	names []string      // its machines
	done  chan struct{} // closed once it has exited
}

// simDataRoot is where simulated stubs keep their outboxes: in memory
// (/dev/shm) when the host has it, since a hundred machines' disks are
// not one disk; else under dir.
func simDataRoot(dir string) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return filepath.Join("/dev/shm", filepath.Base(dir))
	}
	return filepath.Join(dir, "sim")
}

// issueSimCerts writes, for a secure cluster c, the certificates of the
// count stubs named prefix-0 ... that startSim(c, bin, dir, prefix, count)
// will start, where `netmgr sim` looks for them and reuses them; for an
// insecure cluster it does nothing. A real machine holds its certificate
// before its stub starts: a suite that times the stubs' start calls this
// first, so that making 50 certificates a process is not in its figure.
func issueSimCerts(c *servertest.ProcCluster, dir, prefix string, count int) error {
	if !c.Secure() {
		return nil
	}
	ca, err := pki.LoadCA(filepath.Dir(c.CAFile()))
	if err != nil {
		return fmt.Errorf("issue sim certificates: %w", err)
	}
	data := filepath.Join(simDataRoot(dir), prefix)
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		is, err := ca.Issue(pki.Identity{Role: pki.RoleStub, Name: name}, nil, pki.DefaultCertValidity)
		if err != nil {
			return fmt.Errorf("issue sim certificates: %w", err)
		}
		tlsDir := filepath.Join(data, name, "tls")
		if _, err := is.Write(tlsDir); err != nil {
			return fmt.Errorf("issue sim certificates: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tlsDir, pki.CAFile), ca.CertPEM, 0o644); err != nil {
			return fmt.Errorf("issue sim certificates: %w", err)
		}
	}
	return nil
}

// startSim starts `netmgr sim` with count stubs named prefix-0 ... joining
// c's servers, secure as c is, with extra flags, and returns once it has
// announced every stub.
// Its data lives under simDataRoot(dir)/prefix and is removed once it
// exits; its log is dir/sim-PREFIX.log.
func startSim(c *servertest.ProcCluster, bin, dir, prefix string, count int, extra ...string) (*simProc, error) {
	data := filepath.Join(simDataRoot(dir), prefix)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("start sim %s: %w", prefix, err)
	}
	p := &simProc{log: filepath.Join(dir, "sim-"+prefix+".log"), done: make(chan struct{})}
	for i := range count {
		p.names = append(p.names, fmt.Sprintf("%s-%d", prefix, i))
	}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, fmt.Errorf("start sim %s: %w", prefix, err)
	}
	sec := simTLSArgs(c)
	// Whole stubs: the suites that use them measure the stub as it runs.
	args := append([]string{"sim", "--whole-stubs", "--count", strconv.Itoa(count), "--prefix", prefix,
		"--data-dir", data, "--join", strings.Join(gossipAddrs(c), ","), "--log-level", "warn"}, sec...)
	args = append(args, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Many stubs share one heap: collect it less often (the simulator is
	// not what is measured, and memory is plentiful).
	p.cmd.Env = append(os.Environ(), "GOGC="+simGOGC)
	// Its own process group, and SIGKILL should the benchmark die.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start sim %s: %w", prefix, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		_ = os.RemoveAll(data)
		_ = os.Remove(filepath.Dir(data)) // once the last sim is gone
		close(p.done)
	}()
	last := fmt.Sprintf("stub %s api ", p.names[count-1])
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(p.log)
		if strings.Contains(string(b), last) {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("start sim %s: %w (see %s)", prefix, servertest.ErrExited, p.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("start sim %s: no stubs after a minute: %w", prefix, servertest.ErrTimeout)
		}
	}
}

// pid returns the process id.
func (p *simProc) pid() int { return p.cmd.Process.Pid }

// kill SIGKILLs the process and waits for it.
func (p *simProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop sends SIGTERM, and SIGKILL if the stubs have not shut down 20 s
// later, and waits for the process.
func (p *simProc) stop() {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.kill()
		return
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.kill()
	}
}

// stopSims stops the sim processes at once.
func stopSims(sims []*simProc) {
	var wg sync.WaitGroup
	for _, p := range sims {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// simLogs returns the last maxBytes of each sim process's log.
func simLogs(sims []*simProc, maxBytes int) string {
	var b strings.Builder
	for _, p := range sims {
		data, _ := os.ReadFile(p.log)
		if len(data) > maxBytes {
			data = data[len(data)-maxBytes:]
		}
		fmt.Fprintf(&b, "==== %s ====\n%s\n", p.log, data)
	}
	return b.String()
}

// cpuWatch measures the CPU time of named processes from its start.
type cpuWatch struct {
	start time.Time
	pids  map[string]int
	base  map[string]time.Duration
}

// startCPU starts measuring the CPU time of the processes pids names.
func startCPU(pids map[string]int) *cpuWatch {
	w := &cpuWatch{start: time.Now(), pids: pids, base: make(map[string]time.Duration)}
	for name, pid := range pids {
		w.base[name], _ = cpuTime(pid)
	}
	return w
}

// used returns the cores each process used since the start, by name.
func (w *cpuWatch) used() map[string]float64 {
	wall := time.Since(w.start)
	out := make(map[string]float64, len(w.pids))
	for name, pid := range w.pids {
		if t, err := cpuTime(pid); err == nil {
			out[name] = float64(t-w.base[name]) / float64(wall)
		}
	}
	return out
}

// cores formats used, sorted by name: "leader server2 0.95, sim 0.61".
func (w *cpuWatch) cores() string {
	used := w.used()
	names := slices.Sorted(maps.Keys(used))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, used[n])
	}
	return strings.Join(parts, ", ")
}

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuTime returns the user plus system CPU time process pid has used.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU returns utime+stime (fields 14 and 15) of a /proc/PID/stat
// line; the command name in parentheses may hold spaces.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc stat: no command name")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc stat: %d fields", len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc stat: %w", err)
	}
	return time.Duration(utime+stime) * clockTick, nil
}
