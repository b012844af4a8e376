package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The allocation suite's shape (issue 24 point 5): allocStubs stubs, a
// job of N instances for each N of allocSizes, allocRuns times each
// (quick: fewer), after allocWarmup untimed runs.
const (
	allocStubs     = 12
	allocRuns      = 11
	allocRunsQuick = 5
	allocWarmup    = 3
	allocStageRuns = 3
	allocIdle      = 2 * time.Second
)

// allocSizes are the machine counts of the allocation table.
var allocSizes = []int{1, 2, 4, 8, 12}

// prospero holds the Prospero Resource Manager's allocation times in ms
// (seeds/000, Table 3, SPARC-10s in 1994), by node count.
var prospero = map[int]float64{2: 14.7, 4: 19.1, 8: 29.2, 12: 39.7}

// allocVariant is one column of the allocation table: the netexec flags
// it adds to `netexec --unique -n N --wait started` and the job it runs
// (/bin/true when none).
type allocVariant struct {
	name  string
	flags []string
	job   []string
}

// allocVariants are the table's columns: /bin/true, whose instances end
// while the later ones start, as a user's first try would; a job that
// outlives the wait, so that only the allocation is in the figure; and
// gang jobs. A variant whose flags netexec refuses (a build without gang
// jobs) is reported as not measured.
var allocVariants = []allocVariant{
	{name: ""},
	{name: "job sleep 1", job: []string{"/bin/sleep", "1"}},
	{name: "gang", flags: []string{"--gang"}},
}

// command returns the job's command line.
func (v allocVariant) command() []string {
	if len(v.job) == 0 {
		return []string{trueBinary()}
	}
	return v.job
}

// submittedID finds the job id in netexec's "job NAME.OWNER id N submitted".
var submittedID = regexp.MustCompile(`id (\d+) submitted`)

// allocSuite measures what allocating N machines costs as a user sees it:
// the whole `netexec --unique -n N --wait started JOB` process, from its
// start until it exits once every instance has registered, on 3 servers
// and 12 stubs as processes, for each of allocVariants. Each run's job is
// waited for to end (through the API, untimed) before the next, so that
// every stub is free. The sizes take turns within a round, so a slow
// spell of the shared machine spreads over them all. Each run's job also
// says, in the leader's and the stubs' stamps (one clock: every process
// runs here), where its time went: submitted, last placed, last Start
// taken by a stub; and /proc says what CPU every process used meanwhile.
func allocSuite(ctx context.Context, cfg config) ([]figure, error) {
	a, stop, err := startAllocCluster(ctx, cfg, "alloc")
	if err != nil {
		return nil, err
	}
	defer stop()
	fail := func(err error) ([]figure, error) {
		fmt.Fprintf(os.Stderr, "process logs:\n%s", a.c.Logs(4000))
		return nil, err
	}
	runs := allocRuns
	if cfg.quick {
		runs = allocRunsQuick
	}
	if cfg.allocRounds > 0 {
		runs = cfg.allocRounds
	}
	var figs []figure
	for _, v := range allocVariants {
		vf, err := a.variant(ctx, v, runs)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return fail(err)
		}
		figs = append(figs, vf...)
	}
	return figs, nil
}

// allocRun is what one allocation run needs.
type allocRun struct {
	bin     string
	netexec string
	env     []string
	cl      *client.Client
	c       *servertest.ProcCluster
}

// cpuTotal keys, among the roles' CPU, the sum of every process's.
const cpuTotal = "all"

// errRefused is a variant's flags refused by netexec.
var errRefused = errors.New("netexec refused the variant's flags")

// variant measures one column: runs rounds of every size.
func (a allocRun) variant(ctx context.Context, v allocVariant, runs int) ([]figure, error) {
	label := strings.Join(slices.Concat([]string{"netexec"}, v.flags, []string{"--unique -n N --wait started"}, v.command()), " ")
	fmt.Fprintf(os.Stderr, "alloc: %s, N = %v, %d rounds ...\n", label, allocSizes, runs)
	for i := range allocWarmup {
		_, _, err := a.once(ctx, v, allocSizes[i%len(allocSizes)])
		if err != nil && len(v.flags) > 0 && ctx.Err() == nil && !errors.Is(err, errRefused) {
			// A netexec without the flag, or one that takes it otherwise:
			// the column is not measured, the others still are.
			err = fmt.Errorf("%w: %w", errRefused, err)
		}
		if errors.Is(err, errRefused) {
			fmt.Fprintf(os.Stderr, "alloc: %s: n/a: %v\n", label, err)
			return []figure{{Name: "allocate N machines, " + v.name, Unit: "ms",
				Note: fmt.Sprintf("not measured: netexec %s does not run here (%v)", strings.Join(v.flags, " "), err)}}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	idle := a.idleCPU(ctx)
	wall := make(map[int][]float64)
	parts := make(map[int][]allocParts)
	stages := make(map[int]map[string]float64) // summed stage metrics by size
	cpu := make(map[int]map[string][]float64)  // CPU ms by size and role
	var over, slope []float64
	for range runs {
		byN := make(map[int]float64)
		for _, n := range allocSizes {
			d, p, err := a.once(ctx, v, n)
			if err != nil {
				return nil, err
			}
			if p.cpu != nil {
				if cpu[n] == nil {
					cpu[n] = make(map[string][]float64)
				}
				total := p.cliCPU
				for role, ms := range p.cpu {
					ms -= idle[role] * d // what the cluster uses doing nothing
					cpu[n][role] = append(cpu[n][role], ms)
					total += ms
				}
				cpu[n]["netexec"] = append(cpu[n]["netexec"], p.cliCPU)
				cpu[n][cpuTotal] = append(cpu[n][cpuTotal], total)
			}
			byN[n] = d
			wall[n] = append(wall[n], d)
			parts[n] = append(parts[n], p)
		}
		first, last := allocSizes[0], allocSizes[len(allocSizes)-1]
		over = append(over, byN[last]-byN[first])
		slope = append(slope, (byN[last]-byN[first])/float64(last-first))
	}
	// The stage metrics, read from 13 processes over TLS around each run,
	// in rounds of their own: reading them costs the machine more than a
	// run does.
	for _, n := range allocSizes {
		stages[n] = make(map[string]float64)
		for range allocStageRuns {
			before, err := stageSums(ctx, a.c)
			if err != nil {
				return nil, err
			}
			if _, _, err := a.once(ctx, v, n); err != nil {
				return nil, err
			}
			after, err := stageSums(ctx, a.c)
			if err != nil {
				return nil, err
			}
			for k, x := range after {
				stages[n][k] += x - before[k]
			}
		}
	}
	suffix := ""
	if v.name != "" {
		suffix = ", " + v.name
	}
	var figs []figure
	for _, n := range allocSizes {
		f := figure{Name: fmt.Sprintf("allocate %d machine(s)%s", n, suffix), Unit: "ms", Sample: summarize(wall[n])}
		if p, ok := prospero[n]; ok {
			f.Target = fmt.Sprintf("(Prospero 1994: %.1f ms)", p)
		}
		if st := stages[n]; st != nil {
			f.Note = breakdown(nil, st)
			if k := withSuffix(`netmgr_server_raft_commit_seconds{command="ChildEvents"}`, "_count"); st[k] > 0 {
				f.Note += fmt.Sprintf("; %.1f ChildEvents entries per run", st[k]/allocStageRuns)
			}
		}
		if byRole := cpu[n]; len(byRole) > 0 {
			f.Note += "; CPU while netexec ran, mean ms:"
			for _, role := range slices.Sorted(maps.Keys(byRole)) {
				f.Note += fmt.Sprintf(" %s %.1f", role, mean(byRole[role]))
			}
		}
		figs = append(figs, f)
	}
	last := allocSizes[len(allocSizes)-1]
	figs[0].Note = fmt.Sprintf("the whole `%s` process, %d servers and %d stubs as processes, sizes in turn, %d rounds; %s",
		label, len(a.c.Servers), allocStubs, runs, figs[0].Note)
	figs = append(figs,
		figure{Name: fmt.Sprintf("allocate: each added machine, 1 to %d%s", last, suffix), Unit: "ms",
			Sample: summarize(slope), Target: "<= 1 ms"},
		figure{Name: fmt.Sprintf("allocate: CPU of every process, each added machine%s", suffix), Unit: "ms",
			Sample: sample((mean(cpu[last][cpuTotal]) - mean(cpu[allocSizes[0]][cpuTotal])) / float64(last-allocSizes[0])),
			Note: "the servers', stubs', supervisor hosts' and netexec's CPU while netexec ran (/proc, 10 ms ticks), less what the cluster uses idle, means at N=1 and N=" +
				strconv.Itoa(last) + ": what the slope is made of on 2 cores, whatever else runs on the machine"},
		figure{Name: fmt.Sprintf("allocate: %d machines over 1%s", last, suffix), Unit: "ms",
			Sample: summarize(over), Target: "<= 15 ms", Note: describeParts(parts[allocSizes[0]], allocSizes[0]) + "; " + describeParts(parts[last], last)})
	return figs, nil
}

// idleCPU returns the CPU the cluster's processes use doing nothing, by
// role, in ms per ms of wall time, over allocIdle.
func (a allocRun) idleCPU(ctx context.Context) map[string]float64 {
	before, start := clusterCPU(a.bin, a.c.Dir()), time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(allocIdle):
	}
	after, el := clusterCPU(a.bin, a.c.Dir()), float64(time.Since(start))/float64(time.Millisecond)
	rate := make(map[string]float64)
	for role, ms := range after {
		rate[role] = (ms - before[role]) / el
	}
	fmt.Fprintf(os.Stderr, "alloc: the idle cluster uses %.0f ms of CPU a second\n", 1000*mean(slices.Collect(maps.Values(rate)))*float64(len(rate)))
	return rate
}

// once runs one netexec of n instances of v, waits (untimed) for its job
// to end, and returns the process's wall time in ms and the job's stamps.
func (a allocRun) once(ctx context.Context, v allocVariant, n int) (float64, allocParts, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	args := slices.Concat(v.flags, []string{"--unique", "-n", strconv.Itoa(n), "--wait", "started"}, v.command())
	cmd := exec.CommandContext(ctx, a.netexec, args...)
	cmd.Env = a.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	cpu0 := clusterCPU(a.bin, a.c.Dir())
	err := cmd.Run()
	wall := time.Since(start)
	cpu1 := clusterCPU(a.bin, a.c.Dir())
	m := submittedID.FindSubmatch(out.Bytes())
	if err != nil && m == nil {
		if strings.Contains(out.String(), "flag provided but not defined") {
			return 0, allocParts{}, fmt.Errorf("%w: %s", errRefused, strings.TrimSpace(out.String()))
		}
		return 0, allocParts{}, fmt.Errorf("alloc: netexec %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	if m == nil {
		return 0, allocParts{}, fmt.Errorf("alloc: netexec %s printed no job id: %s", strings.Join(args, " "), out.String())
	}
	job, werr := a.cl.WaitJob(ctx, string(m[1]), client.WaitDone)
	if err != nil {
		return 0, allocParts{}, fmt.Errorf("alloc: netexec %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	if werr != nil {
		return 0, allocParts{}, fmt.Errorf("alloc: wait for job %s to end: %w", m[1], werr)
	}
	if got := len(job.Instances); got != n {
		return 0, allocParts{}, fmt.Errorf("alloc: job %d has %d instances, want %d", job.ID, got, n)
	}
	p := jobParts(start, start.Add(wall), job)
	if ps := cmd.ProcessState; ps != nil {
		p.cliCPU = float64(ps.UserTime()+ps.SystemTime()) / float64(time.Millisecond)
	}
	if cpu0 != nil && cpu1 != nil {
		p.cpu = make(map[string]float64)
		for role, ms := range cpu1 {
			p.cpu[role] = ms - cpu0[role]
		}
	}
	return float64(wall) / float64(time.Millisecond), p, nil
}

// allocParts splits one run's wall time at the stamps of its job, each in
// ms from the previous: the CLI's start to the leader's submit stamp, to
// the last instance's placement, to the last StartedAt (a stub stamps it
// as it takes the Start), to the CLI's exit.
type allocParts struct {
	submit, place, fork, seen float64
	cliCPU                    float64 // the netexec process's own CPU
	// cpu is the CPU ms each role of the cluster's processes used while
	// netexec ran (nil without /proc).
	cpu map[string]float64
}

// jobParts splits the run from start to end at job's stamps.
func jobParts(start, end time.Time, job client.Job) allocParts {
	var placed, started time.Time
	for _, in := range job.Instances {
		if in.PlacedAt.After(placed) {
			placed = in.PlacedAt
		}
		if in.StartedAt.After(started) {
			started = in.StartedAt
		}
	}
	msOf := func(a, b time.Time) float64 { return float64(b.Sub(a)) / float64(time.Millisecond) }
	return allocParts{
		submit: msOf(start, job.SubmittedAt),
		place:  msOf(job.SubmittedAt, placed),
		fork:   msOf(placed, started),
		seen:   msOf(started, end),
	}
}

// describeParts says where the time of the runs of n machines went, as
// the medians of each part.
func describeParts(ps []allocParts, n int) string {
	med := func(f func(allocParts) float64) float64 {
		xs := make([]float64, len(ps))
		for i, p := range ps {
			xs[i] = f(p)
		}
		return summarize(xs).Median
	}
	return fmt.Sprintf("N=%d: CLI start to submit stamped %.1f ms, to last placed %.1f, to the last Start a stub received %.1f, to CLI exit %.1f",
		n, med(func(p allocParts) float64 { return p.submit }), med(func(p allocParts) float64 { return p.place }),
		med(func(p allocParts) float64 { return p.fork }), med(func(p allocParts) float64 { return p.seen }))
}

// clusterCPU returns the CPU time, in ms, that the processes running bin
// with dir on their command line (the cluster's servers, stubs and their
// supervisor hosts) have used so far, by role (see clusterPIDs), from
// /proc; nil where there is no /proc.
func clusterCPU(bin, dir string) map[string]float64 {
	pids := clusterPIDs(bin, dir)
	if pids == nil {
		return nil
	}
	const tick = 100.0 // USER_HZ on Linux
	out := make(map[string]float64)
	for role, list := range pids {
		for _, pid := range list {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			// Fields after the command's closing parenthesis: state is the
			// first, utime the 12th and stime the 13th.
			i := bytes.LastIndexByte(stat, ')')
			f := strings.Fields(string(stat[i+1:]))
			if len(f) < 13 {
				continue
			}
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			out[role] += (u + s) / tick * 1000
		}
	}
	return out
}

// clusterPIDs returns the processes running bin with dir on their
// command line by role (the command's first argument: server, stub,
// supervise), from /proc; nil where there is no /proc.
func clusterPIDs(bin, dir string) map[string][]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[string][]int)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != bin {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		if args := bytes.Split(cmdline, []byte{0}); len(args) >= 2 {
			out[string(args[1])] = append(out[string(args[1])], pid)
		}
	}
	return out
}

// mean returns the mean of xs, 0 for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
