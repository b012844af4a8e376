package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The gossip suite's setup: gossipSims `netmgr sim` processes of
// gossipPerSim stubs each (half under BENCH_QUICK), memberlist's default
// LAN settings as servers and stubs use them.
const (
	gossipSims   = 4
	gossipPerSim = 50
	// gossipRounds is how many fresh pools convergence is measured on.
	gossipRounds = 3
	// gossipPoll is how often the suite looks at the servers' views.
	gossipPoll = 50 * time.Millisecond
	// gossipWait bounds every wait for the pool to reach a state.
	gossipWait = 5 * time.Minute
	// gossipDownGrace is how long after every server's memberlist has
	// dropped a killed machine the suite waits for the leader to show it
	// down.
	gossipDownGrace = 5 * time.Second
)

// gossipSuite measures the gossip pool at 200 simulated stubs: how long
// it takes to converge, how long until a killed machine is noticed, how
// many live machines are wrongly suspected while nothing happens, and what
// the servers' CPU costs meanwhile. Convergence is one sample per pool,
// and pools vary (a join's timing rides on memberlist's random gossip
// targets): it is measured on gossipRounds fresh pools, and the last one
// goes on to the steady window and the kills.
func gossipSuite(ctx context.Context, cfg config) ([]figure, error) {
	per, rounds, kills, settle, steady := gossipPerSim, gossipRounds, 5, 20*time.Second, 30*time.Second
	if cfg.quick {
		per, rounds, kills, settle, steady = gossipPerSim/2, 1, 3, 10*time.Second, 10*time.Second
	}
	total := gossipSims * per
	dir, bin, cleanup, err := benchSetup(cfg, "gossip")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var (
		inPool, allUp []float64
		p             *gossipPool
	)
	defer func() { p.stop() }()
	for r := range rounds {
		p.stop()
		if p, err = startGossipPool(ctx, cfg, bin, dir, r, per); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "gossip: pool %d of %d: every server's pool held every stub after %.2f s, every machine up after %.2f s\n",
			r+1, rounds, p.inPool.Seconds(), p.allUp.Seconds())
		inPool = append(inPool, p.inPool.Seconds())
		allUp = append(allUp, p.allUp.Seconds())
	}
	g, fail := p.watch, p.fail
	sims := &p.sims

	// The steady window, once the joins' broadcasts have been re-sent
	// their 4 x log10(N+1) times and left the gossip queues.
	fmt.Fprintf(os.Stderr, "gossip: settling for %v, then steady for %v ...\n", settle, steady)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(settle):
	}
	st, err := g.steady(ctx, *sims, steady)
	if err != nil {
		return fail(err)
	}

	// Dead members.
	var suspect, unreachable, dead []float64
	downs := 0
	for r := range kills {
		fmt.Fprintf(os.Stderr, "gossip: killing a machine (%d of %d) ...\n", r+1, kills)
		d, err := g.killOne(ctx, bin, dir, "k"+strconv.Itoa(r), sims)
		if err != nil {
			return fail(err)
		}
		suspect = append(suspect, d.suspect.Seconds())
		unreachable = append(unreachable, d.unreachable.Seconds())
		dead = append(dead, d.dead.Seconds())
		if d.down > 0 {
			downs++
		}
	}

	setup := fmt.Sprintf("3 servers, %d simulated stubs in %d processes, memberlist DefaultLANConfig "+
		"(probe 1 s, probe timeout 500 ms, suspicion mult 4, gossip 3 nodes every 200 ms); %d fresh pools", total, gossipSims, rounds)
	return []figure{
		{Name: fmt.Sprintf("gossip convergence: every server's pool holds all %d stubs", total), Unit: "s",
			Sample: summarize(inPool), Note: setup},
		{Name: fmt.Sprintf("gossip convergence: all %d machines up on every server", total), Unit: "s",
			Sample: summarize(allUp)},
		{Name: "dead member (SIGKILL): suspect on the leader", Unit: "s", Sample: summarize(suspect),
			Note: "suspect = no lease renewal for 1 s; unreachable = lease expired (3 s + 1 s margin)"},
		{Name: "dead member (SIGKILL): unreachable on the leader", Unit: "s", Sample: summarize(unreachable)},
		{Name: "dead member (SIGKILL): gone from every server's memberlist", Unit: "s", Sample: summarize(dead),
			Note: fmt.Sprintf("the leader showed it down (not only unreachable) in %d of %d kills", downs, kills)},
		{Name: fmt.Sprintf("false suspicions, %v steady: machines seen not up by the leader", steady), Unit: "machines",
			Sample: sample(float64(len(st.notUp))), Target: "0", Note: st.note()},
		{Name: fmt.Sprintf("false suspicions, %v steady: memberlist suspicions among the stubs", steady), Unit: "suspicions",
			Sample: sample(float64(st.suspicions))},
		{Name: fmt.Sprintf("server CPU, %v steady with %d stubs", steady, total), Unit: "cores",
			Sample: summarize(st.serverCores), Target: "< 1 per server"},
	}, nil
}

// gossipWatch reads the servers' views of the pool.
type gossipWatch struct {
	c  *servertest.ProcCluster
	hc *http.Client
}

// machines returns server s's machine list: its own view when stale,
// else the leader's (through s).
func (g *gossipWatch) machines(ctx context.Context, s *servertest.Proc, stale bool) ([]client.Machine, error) {
	url := s.URL() + "/v1/machines"
	if stale {
		url += "?stale"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("list machines: %w", err)
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list machines: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list machines on %s: %s", s.Name, resp.Status)
	}
	var ms []client.Machine
	if err := json.NewDecoder(resp.Body).Decode(&ms); err != nil {
		return nil, fmt.Errorf("list machines on %s: %w", s.Name, err)
	}
	return ms, nil
}

// members returns how many live members server s's memberlist knows, from
// its metrics.
func (g *gossipWatch) members(ctx context.Context, s *servertest.Proc) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, g.hc.Timeout)
	defer cancel()
	m, err := scrapeMetrics(ctx, g.hc, s.URL()+"/metrics")
	if err != nil {
		return 0, err
	}
	v, ok := m["netmgr_server_gossip_members"]
	if !ok {
		return 0, fmt.Errorf("read metrics of %s: no netmgr_server_gossip_members", s.Name)
	}
	return int(v), nil
}

// waitAll polls cond on every server until it holds on all of them, and
// returns how long after start that was.
func (g *gossipWatch) waitAll(ctx context.Context, start time.Time, cond func(context.Context, *servertest.Proc) (bool, error)) (time.Duration, error) {
	deadline := time.Now().Add(gossipWait)
	var last error
	for {
		ok := true
		for _, s := range g.c.Servers {
			held, err := cond(ctx, s)
			if err != nil {
				last = err
			}
			ok = ok && held
		}
		if ok {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("not after %v (last error: %v): %w", gossipWait, last, servertest.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(gossipPoll):
		}
	}
}

// leaderProc returns the leading server.
func (g *gossipWatch) leaderProc() (*servertest.Proc, error) {
	i, _ := g.c.Leader()
	if i < 0 {
		return nil, fmt.Errorf("gossip: no leader")
	}
	return g.c.Servers[i], nil
}

// steadyResult is what the steady window saw.
type steadyResult struct {
	notUp       map[string]bool // machines the leader showed other than up
	episodes    int             // times a machine went from up to another state
	states      map[string]int  // episodes by the state first shown
	longest     time.Duration   // the longest episode seen, to a poll
	suspicions  int             // memberlist "Suspect ... has failed" in the sims' logs
	failed      int             // memberlist "Marking ... as failed" in the sims' logs
	events      int             // machine-left and machine-unreachable events committed
	leader      string
	serverCores []float64 // by server, in the cluster's order
	simCores    float64   // all sim processes together
	udpPerSec   float64   // UDP datagrams the host sent per second
	loPerSec    float64   // bytes per second over the loopback interface
}

// note summarizes r for the table.
func (r steadyResult) note() string {
	return fmt.Sprintf("leader polled every %v: %d episodes (%v), the longest %.1f s; %d machine-left/unreachable events; "+
		"memberlist in the stubs: %d suspicions, %d marked failed; CPU: servers %s (leader %s), the sim processes %.2f cores together; "+
		"host-wide (other work included): %.0f UDP datagrams/s sent, %.0f KB/s over loopback",
		gossipPoll, r.episodes, r.states, r.longest.Seconds(), r.events, r.suspicions, r.failed,
		coresList(r.serverCores), r.leader, r.simCores, r.udpPerSec, r.loPerSec/1000)
}

// coresList formats CPU figures as "0.08, 0.14, 0.07".
func coresList(cores []float64) string {
	parts := make([]string, len(cores))
	for i, c := range cores {
		parts[i] = strconv.FormatFloat(c, 'f', 2, 64)
	}
	return strings.Join(parts, ", ")
}

// watchStates records the leader's machine states, polled every
// gossipPoll: a machine's episode lasts from the first poll that shows it
// other than up to the next that shows it up.
type watchStates struct {
	r     *steadyResult
	since map[string]time.Time // start of each machine's current episode
}

// observe records one poll's machine list, taken at now.
func (w *watchStates) observe(ms []client.Machine, now time.Time) {
	for _, m := range ms {
		start, in := w.since[m.Name]
		switch {
		case m.State != client.MachineUp && !in:
			w.since[m.Name] = now
			w.r.notUp[m.Name] = true
			w.r.episodes++
			w.r.states[m.State]++
		case m.State == client.MachineUp && in:
			w.r.longest = max(w.r.longest, now.Sub(start))
			delete(w.since, m.Name)
		}
	}
}

// close ends the episodes still open at now.
func (w *watchStates) close(now time.Time) {
	for _, start := range w.since {
		w.r.longest = max(w.r.longest, now.Sub(start))
	}
}

// steady watches the pool for d while nothing happens: the leader's
// machine list, the committed machine events, the stubs' memberlist
// suspicions, and the CPU of the servers and sims.
func (g *gossipWatch) steady(ctx context.Context, sims []*simProc, d time.Duration) (steadyResult, error) {
	r := steadyResult{notUp: make(map[string]bool), states: make(map[string]int)}
	leader, err := g.leaderProc()
	if err != nil {
		return r, err
	}
	r.leader = leader.Name
	w := &watchStates{r: &r, since: make(map[string]time.Time)}
	cl, err := g.c.Client()
	if err != nil {
		return r, err
	}
	evs, err := cl.Events(ctx, 0)
	if err != nil {
		return r, fmt.Errorf("gossip: read events: %w", err)
	}
	var after uint64
	if len(evs) > 0 {
		after = evs[len(evs)-1].Index
	}
	offsets := make([]int64, len(sims))
	for i, p := range sims {
		offsets[i] = fileSize(p.log)
	}
	pids := make(map[string]int)
	for _, s := range g.c.Servers {
		pids[s.Name] = s.PID()
	}
	for _, p := range sims {
		pids[p.log] = p.pid()
	}
	cpu := startCPU(pids)
	net0 := readNet()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ms, err := g.machines(ctx, leader, false); err == nil {
			w.observe(ms, time.Now())
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(gossipPoll):
		}
	}
	w.close(time.Now())
	used := cpu.used()
	net1, secs := readNet(), time.Since(cpu.start).Seconds()
	r.udpPerSec = float64(net1.udpOut-net0.udpOut) / secs
	r.loPerSec = float64(net1.loBytes-net0.loBytes) / secs
	for _, s := range g.c.Servers {
		r.serverCores = append(r.serverCores, used[s.Name])
	}
	for _, p := range sims {
		r.simCores += used[p.log]
	}
	if evs, err = cl.Events(ctx, after); err == nil {
		for _, e := range evs {
			if e.Kind == "machine-left" || e.Kind == "machine-unreachable" {
				r.events++
			}
		}
	}
	for i, p := range sims {
		sus, failed, err := countSuspicions(p.log, offsets[i])
		if err != nil {
			return r, err
		}
		r.suspicions += sus
		r.failed += failed
	}
	return r, nil
}

// deathTimes is how long after a machine was killed the leader showed it
// suspect and unreachable, and every server's memberlist dropped it;
// down is when the leader showed it down, 0 if it never did.
type deathTimes struct{ suspect, unreachable, dead, down time.Duration }

// killOne starts a sim process holding one stub named prefix-0, waits
// until every server's pool knows it and the leader has it up, SIGKILLs
// it, and times how long the leader takes to show it suspect and
// unreachable and every server's memberlist to drop it (then it waits a
// few polls more for the leader to show it down).
func (g *gossipWatch) killOne(ctx context.Context, bin, dir, prefix string, sims *[]*simProc) (deathTimes, error) {
	var d deathTimes
	leader, err := g.leaderProc()
	if err != nil {
		return d, err
	}
	before, err := g.members(ctx, leader)
	if err != nil {
		return d, err
	}
	p, err := startSim(g.c, bin, dir, prefix, 1)
	if err != nil {
		return d, err
	}
	*sims = append(*sims, p)
	name := p.names[0]
	if _, err := g.waitAll(ctx, time.Now(), func(ctx context.Context, s *servertest.Proc) (bool, error) {
		n, err := g.members(ctx, s)
		return n > before, err
	}); err != nil {
		return d, fmt.Errorf("gossip: wait for %s in every pool: %w", name, err)
	}
	if _, err := g.waitAll(ctx, time.Now(), func(ctx context.Context, _ *servertest.Proc) (bool, error) {
		return g.state(ctx, leader, name) == client.MachineUp, nil
	}); err != nil {
		return d, fmt.Errorf("gossip: wait for %s up: %w", name, err)
	}
	killed := time.Now()
	p.kill()
	deadline := killed.Add(gossipWait)
	var downBy time.Time // stop looking for down after the gossip death
	for downBy.IsZero() || (d.down == 0 && time.Now().Before(downBy)) {
		if time.Now().After(deadline) {
			return d, fmt.Errorf("gossip: %s still in a server's pool %v after it was killed: %w", name, gossipWait, servertest.ErrTimeout)
		}
		since := time.Since(killed)
		switch g.state(ctx, leader, name) {
		case client.MachineSuspect:
			d.suspect = cmpSet(d.suspect, since)
		case client.MachineUnreachable:
			d.suspect = cmpSet(d.suspect, since)
			d.unreachable = cmpSet(d.unreachable, since)
		case client.MachineDown:
			d.suspect = cmpSet(d.suspect, since)
			d.down = cmpSet(d.down, since)
		}
		if d.dead == 0 {
			gone := true
			for _, s := range g.c.Servers {
				n, err := g.members(ctx, s)
				gone = gone && err == nil && n <= before
			}
			if gone {
				d.dead = since
				downBy = time.Now().Add(gossipDownGrace)
			}
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(gossipPoll):
		}
	}
	return d, nil
}

// cmpSet returns cur, or v when cur is not set yet.
func cmpSet(cur, v time.Duration) time.Duration {
	if cur == 0 {
		return v
	}
	return cur
}

// state returns the leader's state of machine name, "" if it cannot tell.
func (g *gossipWatch) state(ctx context.Context, leader *servertest.Proc, name string) string {
	ms, err := g.machines(ctx, leader, false)
	if err != nil {
		return ""
	}
	for _, m := range ms {
		if m.Name == name {
			return m.State
		}
	}
	return ""
}

// countState counts the machines in state.
func countState(ms []client.Machine, state string) int {
	n := 0
	for _, m := range ms {
		if m.State == state {
			n++
		}
	}
	return n
}

// Memberlist's log lines for a suspicion it raised and for a member it
// declared dead.
var (
	suspectLine = regexp.MustCompile(`memberlist: Suspect \S+ has failed`)
	failedLine  = regexp.MustCompile(`memberlist: Marking \S+ as failed`)
)

// countSuspicions counts memberlist's suspicions and failures in the log
// file path from byte offset on.
func countSuspicions(path string, offset int64) (suspicions, failed int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read sim log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return 0, 0, fmt.Errorf("read sim log: %w", err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		switch line := sc.Bytes(); {
		case suspectLine.Match(line):
			suspicions++
		case failedLine.Match(line):
			failed++
		}
	}
	return suspicions, failed, sc.Err()
}

// fileSize returns the size of path, 0 if it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// netCounters are the host's UDP datagrams and loopback bytes so far.
type netCounters struct{ udpIn, udpOut, loBytes int64 }

// readNet reads the host's counters from /proc/net/snmp and /proc/net/dev;
// what cannot be read stays 0.
func readNet() netCounters {
	var c netCounters
	if b, err := os.ReadFile("/proc/net/snmp"); err == nil {
		c.udpIn, c.udpOut = parseUDP(string(b))
	}
	if b, err := os.ReadFile("/proc/net/dev"); err == nil {
		c.loBytes = parseLoBytes(string(b))
	}
	return c
}

// parseUDP returns InDatagrams and OutDatagrams from /proc/net/snmp, whose
// "Udp:" lines are a header and the values.
func parseUDP(snmp string) (in, out int64) {
	var head []string
	for _, line := range strings.Split(snmp, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		for i := 1; i < len(f) && i < len(head); i++ {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			switch head[i] {
			case "InDatagrams":
				in = v
			case "OutDatagrams":
				out = v
			}
		}
		return in, out
	}
	return 0, 0
}

// parseLoBytes returns the bytes received on the loopback interface from
// /proc/net/dev (all of them were sent on it too).
func parseLoBytes(dev string) int64 {
	for _, line := range strings.Split(dev, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != "lo" {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			return v
		}
	}
	return 0
}
