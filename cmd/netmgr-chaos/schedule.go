package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault kinds. The leader's faults name no target: the leader is found
// when the fault starts. The whole-control-plane faults name none either:
// they take every server (or cut every stub off from them).
const (
	faultKillLeader       = "kill-leader"       // docker kill the leader; docker start it after For
	faultKillServers      = "kill-servers"      // docker kill 1-2 servers; start them after For
	faultPauseServer      = "pause-server"      // docker pause a server; unpause after For
	faultPartitionServers = "partition-servers" // disconnect a minority of servers from the network
	faultPartitionLeader  = "partition-leader"  // disconnect the leader alone
	faultPauseAll         = "pause-all"         // docker pause every server; unpause them all after For
	faultKillAll          = "kill-all"          // docker kill every server; start them all after For
	faultCutStubs         = "cut-stubs"         // every stub drops its traffic with the servers; stubs still see each other
	faultKillStub         = "kill-stub"         // machine loss: docker kill a stub container
	faultRestartStub      = "restart-stub"      // kill the stub process alone; its entrypoint restarts it
	faultPauseStub        = "pause-stub"        // docker pause a stub container
	faultPartitionStub    = "partition-stub"    // disconnect one stub from the network
	faultIsolateStub      = "isolate-stub"      // one stub (by default the busiest) drops its traffic with every other container
)

// serverFaults hit a minority of the servers; at most one runs at a time.
// controlPlaneFaults take the whole server group away from the stubs; each
// runs alone. stubFaults hit one machine each.
var (
	serverFaults       = []string{faultKillLeader, faultKillServers, faultPauseServer, faultPartitionServers, faultPartitionLeader}
	controlPlaneFaults = []string{faultPauseAll, faultKillAll, faultCutStubs}
	stubFaults         = []string{faultKillStub, faultRestartStub, faultPauseStub, faultPartitionStub, faultIsolateStub}
)

// allFaults is every kind, in the order above.
func allFaults() []string {
	return slices.Concat(serverFaults, controlPlaneFaults, stubFaults)
}

// fault is one entry of the schedule.
type fault struct {
	At      time.Duration // from the start of the workload
	Kind    string
	For     time.Duration // how long before it is healed
	Targets []string      // server or machine names
	Signal  string        // restart-stub: the signal sent to the stub process
}

// schedule is the seed, the duration and the faults in order of At.
type schedule struct {
	Seed     int64
	Duration time.Duration
	Faults   []fault
}

// Schedule shape: the first fault waits for the workload to get going;
// faults are spaced so the system can react.
const (
	firstFault  = 10 * time.Second
	minGap      = 10 * time.Second
	maxGap      = 20 * time.Second
	openingGap  = 8 * time.Second // between two faults of the opening
	overlapProb = 0.25            // chance a fault gets a companion of the other class
	// maxKillAll bounds a kill-all outage drawn after the opening, and
	// maxOpeningKillAll the opening's, so that CI's 90 s run keeps to its
	// time. Before the pool healed by itself (issue 23) it did not come
	// back once every server had been down for ~20 s; now a 40 s kill-all
	// passes.
	maxKillAll        = 45 * time.Second
	maxOpeningKillAll = 10 * time.Second
)

// opening is how every generated schedule starts: the faults a whole site
// meets, openingGap apart, so that CI's 90 s run (seed 1) has each of
// them: pause-all, cut-stubs, isolate-stub with a minority server fault
// inside it, kill-all. The longest opening (10 + 15 + 8 + 15 + 8 + 15 + 8
// + 10 s) ends by 89 s.
var opening = []string{faultPauseAll, faultCutStubs, faultIsolateStub, faultKillAll}

// generate builds the schedule for seed over duration, with servers
// s1..sN and stubs stub1..stubM: the opening, as much of it as fits, then
// faults drawn from every kind, each after the previous one healed.
func generate(seed int64, duration time.Duration, servers, stubs int) schedule {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e65746d6772))
	sc := schedule{Seed: seed, Duration: duration}
	at := firstFault
	for _, kind := range opening {
		f := randomFault(rng, kind, servers, stubs, nil)
		if kind == faultKillAll {
			f.For = between(rng, 5*time.Second, maxOpeningKillAll)
		}
		f.At = at
		if at+f.For > duration {
			return sc
		}
		sc.Faults = append(sc.Faults, f)
		if kind == faultIsolateStub {
			g := randomFault(rng, pick(rng, serverFaults), servers, stubs, f.Targets)
			g.At = at + between(rng, 0, f.For/2)
			g.For = min(g.For, f.At+f.For-g.At)
			sc.Faults = append(sc.Faults, g)
		}
		at += f.For + openingGap
	}
	at += between(rng, minGap, maxGap) - openingGap
	for {
		f := randomFault(rng, pick(rng, allFaults()), servers, stubs, nil)
		f.At = at
		if at+f.For > duration {
			break
		}
		sc.Faults = append(sc.Faults, f)
		if f.For > 0 && !slices.Contains(controlPlaneFaults, f.Kind) && rng.Float64() < overlapProb {
			other := stubFaults
			if slices.Contains(stubFaults, f.Kind) {
				other = serverFaults
			}
			g := randomFault(rng, pick(rng, other), servers, stubs, f.Targets)
			g.At = at + between(rng, 0, f.For/2)
			if g.At+g.For <= duration {
				sc.Faults = append(sc.Faults, g)
			}
			at = max(at+f.For, g.At+g.For)
		} else {
			at += f.For
		}
		at += between(rng, minGap, maxGap)
	}
	return sc
}

// randomFault draws a fault of kind with its duration and targets,
// avoiding the names in busy.
func randomFault(rng *rand.Rand, kind string, servers, stubs int, busy []string) fault {
	f := fault{Kind: kind}
	serverName := func() string { return fmt.Sprintf("s%d", 1+rng.IntN(servers)) }
	stubName := func() string {
		for {
			n := fmt.Sprintf("stub%d", 1+rng.IntN(stubs))
			if !slices.Contains(busy, n) || stubs == 1 {
				return n
			}
		}
	}
	minority := (servers - 1) / 2
	someServers := func() []string {
		n := 1 + rng.IntN(max(minority, 1))
		perm := rng.Perm(servers)[:min(n, servers)]
		var out []string
		for _, i := range perm {
			out = append(out, fmt.Sprintf("s%d", i+1))
		}
		slices.Sort(out)
		return out
	}
	switch kind {
	case faultKillLeader:
		f.For = between(rng, 5*time.Second, 15*time.Second)
	case faultKillServers:
		f.For = between(rng, 5*time.Second, 20*time.Second)
		f.Targets = someServers()
	case faultPauseServer:
		f.For = between(rng, 5*time.Second, 15*time.Second)
		f.Targets = []string{serverName()}
	case faultPartitionServers:
		f.For = between(rng, 10*time.Second, 20*time.Second)
		f.Targets = someServers()
	case faultPartitionLeader:
		f.For = between(rng, 10*time.Second, 20*time.Second)
	case faultPauseAll:
		f.For = between(rng, 5*time.Second, 15*time.Second)
	case faultKillAll:
		f.For = between(rng, 5*time.Second, maxKillAll)
	case faultCutStubs:
		f.For = between(rng, 8*time.Second, 15*time.Second)
	case faultKillStub:
		f.For = between(rng, 10*time.Second, 30*time.Second)
		f.Targets = []string{stubName()}
	case faultRestartStub:
		f.Targets = []string{stubName()}
		f.Signal = pick(rng, []string{"KILL", "TERM"})
	case faultPauseStub:
		f.For = between(rng, 5*time.Second, 15*time.Second)
		f.Targets = []string{stubName()}
	case faultPartitionStub:
		f.For = between(rng, 10*time.Second, 25*time.Second)
		f.Targets = []string{stubName()}
	case faultIsolateStub:
		// No target: the stub running the most restartable attempts is
		// found when it starts, so the isolation has work to stop.
		f.For = between(rng, 10*time.Second, 15*time.Second)
	}
	return f
}

// between draws a duration in [lo, hi], rounded to 100 ms.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return (lo + time.Duration(rng.Int64N(int64(hi-lo)+1))).Round(100 * time.Millisecond)
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// String is the fault as one schedule line.
func (f fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fault +%s %s for %s", f.At, f.Kind, f.For)
	for _, t := range f.Targets {
		b.WriteString(" " + t)
	}
	if f.Signal != "" {
		b.WriteString(" sig=" + f.Signal)
	}
	return b.String()
}

// write prints the schedule in the form parseSchedule reads, each line
// after prefix.
func (sc schedule) write(w io.Writer, prefix string) {
	fmt.Fprintf(w, "%sseed %d\n", prefix, sc.Seed)
	fmt.Fprintf(w, "%sduration %s\n", prefix, sc.Duration)
	for _, f := range sc.Faults {
		fmt.Fprintf(w, "%s%s\n", prefix, f)
	}
}

// parseSchedule reads a schedule as write prints it. Lines may carry the
// "chaos: " prefix of the suite's output; other lines are ignored, so the
// suite's whole output can be replayed.
func parseSchedule(r io.Reader) (schedule, error) {
	var sc schedule
	var haveSeed, haveDuration bool
	s := bufio.NewScanner(r)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s.Text()), "chaos:"))
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		var err error
		switch fields[0] {
		case "seed":
			sc.Seed, err = strconv.ParseInt(fields[1], 10, 64)
			haveSeed = err == nil
		case "duration":
			sc.Duration, err = time.ParseDuration(fields[1])
			haveDuration = err == nil
		case "fault":
			var f fault
			if f, err = parseFault(fields[1:]); err == nil {
				sc.Faults = append(sc.Faults, f)
			}
		default:
			continue
		}
		if err != nil {
			return schedule{}, fmt.Errorf("parse schedule: line %d: %w", n, err)
		}
	}
	if err := s.Err(); err != nil {
		return schedule{}, fmt.Errorf("parse schedule: %w", err)
	}
	if !haveSeed || !haveDuration {
		return schedule{}, fmt.Errorf("parse schedule: want a seed and a duration line")
	}
	slices.SortStableFunc(sc.Faults, func(a, b fault) int { return int(a.At - b.At) })
	return sc, nil
}

// parseFault reads "+AT KIND for DUR [TARGET...] [sig=SIG]".
func parseFault(fields []string) (fault, error) {
	if len(fields) < 4 || !strings.HasPrefix(fields[0], "+") || fields[2] != "for" {
		return fault{}, fmt.Errorf("want \"fault +AT KIND for DUR [TARGET...]\", got %q", strings.Join(fields, " "))
	}
	var f fault
	var err error
	if f.At, err = time.ParseDuration(fields[0][1:]); err != nil {
		return fault{}, fmt.Errorf("fault time: %w", err)
	}
	f.Kind = fields[1]
	if !slices.Contains(allFaults(), f.Kind) {
		return fault{}, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if f.For, err = time.ParseDuration(fields[3]); err != nil {
		return fault{}, fmt.Errorf("fault duration: %w", err)
	}
	for _, t := range fields[4:] {
		if sig, ok := strings.CutPrefix(t, "sig="); ok {
			f.Signal = sig
			continue
		}
		f.Targets = append(f.Targets, t)
	}
	switch f.Kind {
	case faultKillLeader, faultPartitionLeader:
		if len(f.Targets) != 0 {
			return fault{}, fmt.Errorf("%s takes no target: the leader is found when it starts", f.Kind)
		}
	case faultPauseAll, faultKillAll, faultCutStubs:
		if len(f.Targets) != 0 {
			return fault{}, fmt.Errorf("%s takes no target: it takes every server", f.Kind)
		}
	case faultIsolateStub:
		if len(f.Targets) > 1 {
			return fault{}, fmt.Errorf("%s takes one stub, or none for the busiest when it starts", f.Kind)
		}
	case faultKillServers, faultPartitionServers:
		if len(f.Targets) == 0 {
			return fault{}, fmt.Errorf("%s needs at least one server", f.Kind)
		}
	default:
		if len(f.Targets) != 1 {
			return fault{}, fmt.Errorf("%s needs exactly one target", f.Kind)
		}
	}
	return f, nil
}

// validate checks the targets exist, no moment has a majority of servers
// faulted by the minority server faults, and each whole-control-plane
// fault runs alone: it already takes every server, and another fault
// would blur which of them stopped what.
func (sc schedule) validate(t topology) error {
	names := map[string]bool{}
	for _, n := range t.all() {
		names[n.Name] = true
	}
	for _, f := range sc.Faults {
		for _, n := range f.Targets {
			if !names[n] {
				return fmt.Errorf("schedule: %s: unknown target %q", f, n)
			}
		}
	}
	for i, f := range sc.Faults {
		if !slices.Contains(controlPlaneFaults, f.Kind) {
			continue
		}
		for j, g := range sc.Faults {
			if i != j && g.At <= f.At+f.For && f.At <= g.At+g.For {
				return fmt.Errorf("schedule: %s overlaps %s: a whole-control-plane fault runs alone", f, g)
			}
		}
	}
	majority := len(t.Servers)/2 + 1
	for _, f := range sc.Faults {
		down := 0
		for _, g := range sc.Faults {
			if !slices.Contains(serverFaults, g.Kind) || g.At > f.At || g.At+g.For < f.At {
				continue
			}
			down += max(len(g.Targets), 1)
		}
		if down >= majority {
			return fmt.Errorf("schedule: at +%s %d of %d servers would be faulted, a majority", f.At, down, len(t.Servers))
		}
	}
	return nil
}
