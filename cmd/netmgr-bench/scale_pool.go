package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The scale suite's pool part: a 3-server group and the shared simulator
// (package stub/simpool) per size, in as many `netmgr sim` processes as
// the open-file limit asks (scalePoolPerProcess).
const (
	// scalePoolDefault and scalePoolQuick are the sizes measured when
	// -scale-pool names none.
	scalePoolDefault = "1000,5000,10000"
	scalePoolQuick   = "200"
	// scalePoolPoll is how often the suite looks at the servers while it
	// waits; listing 10,000 machines is not free, so not often.
	scalePoolPoll = time.Second
	// scalePoolJoinWait bounds the wait for the pool to converge.
	scalePoolJoinWait = 15 * time.Minute
	// scalePoolGoneWait bounds the wait for the servers' memberlists to
	// drop a killed machine once the leader noticed it: the simulated
	// machines probe no one, and each server probes a given member once
	// every N/1 s (one probe a second, round-robin), 28 minutes for
	// 5,000 machines among 3 servers; in a real pool every stub probes.
	scalePoolGoneWait = 2 * time.Minute
	// scalePoolJoinRate is how many machines a second begin to join in
	// a pool of more than scalePoolPacedOver (netmgr sim --join-rate;
	// -scale-join-rate): as fast as the servers answer, 10,000 machines'
	// joins overloaded this 2-core host and its leadership changed (each
	// change makes every joined machine shake hands with the new leader).
	scalePoolJoinRate  = 50
	scalePoolPacedOver = 1000
	// scalePoolRunTime is how long a simulated attempt runs: longer than
	// a pool's run, so the restartable work stays put unless stopped.
	scalePoolRunTime = time.Hour
)

// scalePoolSizes returns the pool sizes to measure: -scale-pool's, or the
// defaults when the suite was named in -only or the run is quick; none
// in a full run of every suite, where thousands of machines would cost
// minutes and the box's memory.
func scalePoolSizes(cfg config) ([]int, error) {
	list := cfg.scalePool
	if list == "" {
		switch {
		case cfg.quick:
			list = scalePoolQuick
		case slices.Contains(strings.Split(cfg.only, ","), "scale"):
			list = scalePoolDefault
		default:
			return nil, nil
		}
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("-scale-pool: %q is not a machine count from 1 to 10000", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scalePoolSuite measures, for each size, a 3-server TLS group with that
// many simulated machines: join convergence, the idle CPU and RSS of each
// server and of the simulator, false suspicions over a steady window,
// and how long a killed machine takes to be noticed.
func scalePoolSuite(ctx context.Context, cfg config) ([]figure, error) {
	sizes, err := scalePoolSizes(cfg)
	if err != nil || len(sizes) == 0 {
		return nil, err
	}
	// The servers, started by this process, inherit the limit: the
	// leader holds a connection from every machine.
	if err := raiseNoFile(1 << 17); err != nil {
		return nil, err
	}
	dir, bin, cleanup, err := benchSetup(cfg, "scalepool")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// The settling outlasts the machines' first round of warming (a
	// connection to each follower, within 30 s of a machine's first
	// renewal: client.WithWarmConnections), which is part of joining.
	settle, steady := 35*time.Second, 60*time.Second
	if cfg.quick {
		settle, steady = 5*time.Second, 10*time.Second
	}
	if cfg.scaleSteady > 0 {
		steady = cfg.scaleSteady
	}
	var figs []figure
	for i, n := range sizes {
		f, err := scalePoolRun(ctx, cfg, bin, dir, i, n, settle, steady)
		if err != nil {
			return nil, fmt.Errorf("scale pool of %d: %w", n, err)
		}
		figs = append(figs, f...)
	}
	return figs, nil
}

// scalePoolRun measures one size.
func scalePoolRun(ctx context.Context, cfg config, bin, dir string, round, n int, settle, steady time.Duration) ([]figure, error) {
	fmt.Fprintf(os.Stderr, "scale: pool of %d: starting 3 servers ...\n", n)
	c, err := startCluster(cfg, bin, filepath.Join(dir, "cluster-"+strconv.Itoa(round)), 3, 0)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	var sim *poolSim
	fail := func(err error) ([]figure, error) {
		logs := ""
		if sim != nil {
			logs = simLogs(sim.simProcs(), 3000)
		}
		fmt.Fprintf(os.Stderr, "process logs:\n%s%s", c.Logs(3000), logs)
		return nil, err
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return fail(err)
	}
	prefix := "p" + strconv.Itoa(round)
	fmt.Fprintf(os.Stderr, "scale: pool of %d: issuing certificates ...\n", n)
	if err := issueSimCerts(c, dir, prefix, n); err != nil {
		return fail(err)
	}
	hc := c.HTTPClient()
	hc.Timeout = 30 * time.Second
	g := &gossipWatch{c: c, hc: hc}

	fmt.Fprintf(os.Stderr, "scale: pool of %d: starting the simulator ...\n", n)
	start := time.Now()
	if sim, err = startPoolSim(c, bin, dir, prefix, round, n, cfg.scaleJoinRate); err != nil {
		return fail(err)
	}
	defer sim.stop()
	_, err = scalePoolWait(ctx, "every server's pool holding every machine", func() (bool, error) {
		for _, s := range c.Servers {
			m, err := g.members(ctx, s)
			if err != nil || m < n+len(c.Servers) {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fail(err)
	}
	inPool := time.Since(start)
	_, err = scalePoolWait(ctx, "every machine up on the leader", func() (bool, error) {
		leader, err := g.leaderProc()
		if err != nil {
			return false, nil
		}
		ms, err := g.machines(ctx, leader, true)
		return countState(ms, client.MachineUp) >= n, err
	})
	if err != nil {
		return fail(err)
	}
	allUp := time.Since(start)
	sim.renice(0)
	fmt.Fprintf(os.Stderr, "scale: pool of %d: every server's pool held every machine after %.1f s, all up on the leader after %.1f s; settling %v, then steady %v ...\n",
		n, inPool.Seconds(), allUp.Seconds(), settle, steady)

	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(settle):
	}
	st, err := scalePoolSteady(ctx, g, sim, steady)
	if err != nil {
		return fail(err)
	}
	victim := prefix + "-" + strconv.Itoa(n/2)
	loss, gone, err := scalePoolKill(ctx, g, sim, victim, n)
	if err != nil {
		return fail(err)
	}
	goneText := fmt.Sprintf("after %.1f s", gone.Seconds())
	if gone == 0 {
		goneText = fmt.Sprintf("not within %v (the simulated machines probe no one)", scalePoolGoneWait)
	}
	fmt.Fprintf(os.Stderr, "scale: pool of %d: over the steady window %d machines not up on the leader, %d suspicions refuted; the killed machine not up on the leader after %.2f s, gone from every memberlist %s\n",
		n, len(st.notUp), st.refuted, loss.Seconds(), goneText)
	ll, err := scalePoolLeaderKill(ctx, g, n-1, victim)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "scale: pool of %d: the leader killed: a submit accepted after %.2f s, every machine up on %s after %.1f s and back on streams after %.1f s, %d shown down or unreachable, %d restartable instances stopped; connections accepted meanwhile %v, its CPU %.2f cores\n",
		n, ll.accepted.Seconds(), ll.seen.leader, ll.allUp.Seconds(), ll.onStreams.Seconds(), len(ll.lost), ll.stopped, ll.conns, ll.cores)

	pause, err := scalePoolPause(ctx, g, sim, n-1, victim)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "scale: pool of %d: every server paused %v: a submit accepted %.2f s after the resume, every machine up after %.1f s, %d shown down or unreachable, %d of %d restartable instances stopped (%d attempts stopped by the simulator; its rounds: %d another process missed, %d without a majority)\n",
		n, scalePoolPauseFor, pause.accepted.Seconds(), pause.allUp.Seconds(), len(pause.lost), pause.stopped, pause.work, pause.simStops, pause.peerMisses, pause.bareRounds)

	pl, err := scalePoolPlace(ctx, g, n, n-1)
	if err != nil {
		return fail(err)
	}
	if pl.filled > 0 {
		fmt.Fprintf(os.Stderr, "scale: pool of %d: with the pool full and %d instances waiting, %.1f passes a second of %.2f ms each\n",
			n, pl.queued-pl.fit, pl.stuckPasses, pl.stuckPassMS)
	}

	size := fmt.Sprintf("%d machines", n)
	note := fmt.Sprintf("3 TLS servers (processes) and %d machines in %d `netmgr sim` processes (shared simulator); steady %v after %v settling; "+
		"leader %s; the leader polled every %v: %d episodes not up (%v); CPU (cores): servers %s, sim %.2f; "+
		"RSS (MiB): servers %s, sim %.0f; suspicions refuted by the sim: %d",
		n, len(sim.procs), steady, settle, st.leader, scalePoolPoll, st.episodes, st.states, coresList(st.serverCores), st.simCores,
		coresList(st.serverRSS), st.simRSS, st.refuted)
	followersCPU, followersRSS := st.followers(st.serverCores), st.followers(st.serverRSS)
	figs := []figure{
		{Name: "join convergence, every server's memberlist holds all " + size, Unit: "s", Sample: sample(inPool.Seconds()), Note: note},
		{Name: "join convergence, all " + size + " up on the leader", Unit: "s", Sample: sample(allUp.Seconds())},
		{Name: "idle CPU, leader, " + size, Unit: "cores", Sample: sample(st.serverCores[st.leaderAt]), Target: "<= 0.3"},
		{Name: "idle CPU, each follower, " + size, Unit: "cores", Sample: summarize(followersCPU), Target: "<= 0.1"},
		{Name: "RSS, leader, " + size, Unit: "MiB", Sample: sample(st.serverRSS[st.leaderAt]), Target: "<= 1024"},
		{Name: "RSS, each follower, " + size, Unit: "MiB", Sample: summarize(followersRSS)},
		{Name: "false suspicions over " + steady.String() + ": machines not up on the leader, " + size, Unit: "machines",
			Sample: sample(float64(len(st.notUp))), Target: "0"},
		{Name: "false suspicions over " + steady.String() + ": suspicions refuted, " + size, Unit: "suspicions",
			Sample: sample(float64(st.refuted)), Target: "0"},
		{Name: "simulator CPU idle, " + size, Unit: "cores", Sample: sample(st.simCores)},
		{Name: "simulator RSS, " + size, Unit: "MiB", Sample: sample(st.simRSS), Target: "<= 6144"},
		{Name: "killed machine: not up on the leader, " + size, Unit: "s", Sample: sample(loss.Seconds())},
	}
	if gone > 0 {
		figs = append(figs, figure{Name: "killed machine: gone from every server's memberlist, " + size, Unit: "s", Sample: sample(gone.Seconds())})
	}
	figs = append(figs, ll.figures(size)...)
	figs = append(figs, pause.figures(size)...)
	return append(figs, pl.figures(size)...), nil
}

// scalePoolWait polls cond every scalePoolPoll until it holds, and returns
// how long that took.
func scalePoolWait(ctx context.Context, what string, cond func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	var last error
	for {
		ok, err := cond()
		if err != nil {
			last = err
		}
		if ok {
			return time.Since(start), nil
		}
		if time.Since(start) > scalePoolJoinWait {
			return 0, fmt.Errorf("wait for %s: not after %v (last error: %v): %w", what, scalePoolJoinWait, last, servertest.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(scalePoolPoll):
		}
	}
}

// poolSteady is what the steady window saw.
type poolSteady struct {
	steadyResult
	leaderAt  int       // the leader's index in the cluster's servers
	serverRSS []float64 // MiB, by server, at the window's end
	simRSS    float64   // MiB
	refuted   int64     // suspicions the sim refuted during the window
}

// followers returns v without the leader's.
func (s poolSteady) followers(v []float64) []float64 {
	var out []float64
	for i, x := range v {
		if i != s.leaderAt {
			out = append(out, x)
		}
	}
	return out
}

// scalePoolSteady watches the pool for d while nothing happens.
func scalePoolSteady(ctx context.Context, g *gossipWatch, sim *poolSim, d time.Duration) (poolSteady, error) {
	s := poolSteady{steadyResult: steadyResult{notUp: make(map[string]bool), states: make(map[string]int)}}
	li, _ := g.c.Leader()
	if li < 0 {
		return s, errors.New("no leader")
	}
	s.leaderAt, s.leader = li, g.c.Servers[li].Name
	before, err := sim.stats()
	if err != nil {
		return s, err
	}
	pids := sim.pids()
	for _, p := range g.c.Servers {
		pids[p.Name] = p.PID()
	}
	cpu := startCPU(pids)
	w := &watchStates{r: &s.steadyResult, since: make(map[string]time.Time)}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ms, err := g.machines(ctx, g.c.Servers[li], true); err == nil {
			w.observe(ms, time.Now())
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(scalePoolPoll):
		}
	}
	w.close(time.Now())
	used := cpu.used()
	for _, p := range g.c.Servers {
		s.serverCores = append(s.serverCores, used[p.Name])
		mem, err := procMemory(p.PID())
		if err != nil {
			return s, err
		}
		s.serverRSS = append(s.serverRSS, mem["VmRSS"])
	}
	for name, pid := range sim.pids() {
		s.simCores += used[name]
		mem, err := procMemory(pid)
		if err != nil {
			return s, err
		}
		s.simRSS += mem["VmRSS"]
	}
	after, err := sim.stats()
	if err != nil {
		return s, err
	}
	s.refuted = after.refuted - before.refuted
	fmt.Fprintf(os.Stderr, "scale: at rest over %v: servers %.3f cores (%.0f MiB RSS), the simulator %.3f\n",
		d, s.serverCores, s.serverRSS, s.simCores)
	return s, nil
}

// scalePoolKill kills simulated machine name and returns how long until
// the leader showed it other than up, and until every server's memberlist
// had dropped it (n machines before): 0 when it had not within
// scalePoolGoneWait of the first.
func scalePoolKill(ctx context.Context, g *gossipWatch, sim *poolSim, name string, n int) (loss, gone time.Duration, err error) {
	fmt.Fprintf(os.Stderr, "scale: pool of %d: killing %s ...\n", n, name)
	start := time.Now()
	if err := sim.kill(name); err != nil {
		return 0, 0, err
	}
	var lossAt, goneAt time.Duration
	_, err = scalePoolWait(ctx, name+" noticed by the leader and gone from every server's memberlist", func() (bool, error) {
		if lossAt == 0 {
			if leader, err := g.leaderProc(); err == nil {
				if ms, err := g.machines(ctx, leader, true); err == nil {
					for _, m := range ms {
						if m.Name == name && m.State != client.MachineUp {
							lossAt = time.Since(start)
						}
					}
				}
			}
		}
		if goneAt == 0 {
			all := true
			for _, s := range g.c.Servers {
				m, err := g.members(ctx, s)
				all = all && err == nil && m <= n-1+len(g.c.Servers)
			}
			if all {
				goneAt = time.Since(start)
			}
		}
		return lossAt > 0 && (goneAt > 0 || time.Since(start) > lossAt+scalePoolGoneWait), nil
	})
	return lossAt, goneAt, err
}

// raiseNoFile raises this process's open-file limit (and so its
// children's) to at least want, the hard limit too as root.
func raiseNoFile(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("open-file limit: %w", err)
	}
	if lim.Cur >= want {
		return nil
	}
	next := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
		// Not root: as far as the hard limit goes, and say so.
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		fmt.Fprintf(os.Stderr, "scale: open-file limit stays %d (%v): the largest pools may not fit\n", lim.Cur, err)
	}
	return nil
}
