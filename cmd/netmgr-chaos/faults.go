package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// injected is what happened to one fault of the schedule: its resolved
// targets and when it was in force, in the ledger's clock (seconds since
// boot), so violations can be matched to the faults around them.
type injected struct {
	Fault   fault
	Targets []node
	From    float64
	To      float64
	Err     error // the fault could not be injected (it then counts as skipped)
}

// injector applies a schedule to a cluster.
type injector struct {
	c   *cluster
	out io.Writer
	now func() float64 // the ledger clock

	mu   sync.Mutex // guards done and log writes
	done []injected
}

// run injects every fault at its time after start and heals it after its
// duration; it returns once all are healed or ctx ends (then healing
// right away). Faults whose windows overlap run at the same time.
func (in *injector) run(ctx context.Context, start time.Time, sc schedule) {
	var wg sync.WaitGroup
	for _, f := range sc.Faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.one(ctx, start, f)
		}()
	}
	wg.Wait()
}

// one waits for f's time, injects it, waits its duration and heals it.
func (in *injector) one(ctx context.Context, start time.Time, f fault) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(start.Add(f.At))):
	}
	rec := injected{Fault: f, From: in.now()}
	targets, heal, err := in.inject(ctx, f)
	rec.Targets = targets
	if err != nil {
		rec.Err = err
		rec.To = in.now()
		in.record(rec)
		return
	}
	in.logf("+%-7s inject %s on %s", since(start), f.Kind, names(targets))
	select {
	case <-ctx.Done():
	case <-time.After(f.For):
	}
	// Heal even when ctx has ended: the checker needs everything back.
	hctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := heal(hctx); err != nil {
		in.logf("+%-7s heal %s on %s: %v", since(start), f.Kind, names(targets), err)
	}
	rec.To = in.now()
	in.record(rec)
	in.logf("+%-7s healed %s on %s", since(start), f.Kind, names(targets))
}

// inject applies f and returns its targets and the function that heals it.
func (in *injector) inject(ctx context.Context, f fault) ([]node, func(context.Context) error, error) {
	targets, err := in.resolve(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	d := in.c.d
	// each runs one docker command per target, all at once, so a fault on
	// several containers hits them together.
	each := func(ctx context.Context, args func(n node) []string) error {
		errs := make([]error, len(targets))
		var wg sync.WaitGroup
		for i, n := range targets {
			wg.Go(func() { _, errs[i] = d.run(ctx, args(n)...) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	kill := func(n node) []string { return []string{"kill", n.Container} }
	start := func(n node) []string { return []string{"start", n.Container} }
	pause := func(n node) []string { return []string{"pause", n.Container} }
	unpause := func(n node) []string { return []string{"unpause", n.Container} }
	disconnect := func(n node) []string { return []string{"network", "disconnect", "-f", networkName, n.Container} }
	connect := func(n node) []string {
		return []string{"network", "connect", "--ip", n.IP.String(), networkName, n.Container}
	}
	var inj, heal func(n node) []string
	switch f.Kind {
	case faultKillLeader, faultKillServers, faultKillStub, faultKillAll:
		inj, heal = kill, start
	case faultPauseServer, faultPauseStub, faultPauseAll:
		inj, heal = pause, unpause
	case faultPartitionServers, faultPartitionLeader, faultPartitionStub:
		inj, heal = disconnect, connect
	case faultCutStubs, faultIsolateStub:
		peers := cutPeers(in.c.topo, f.Kind, targets)
		inj = func(n node) []string { return cutArgs(n, "add", peers) }
		heal = func(n node) []string { return cutArgs(n, "del", peers) }
	case faultRestartStub:
		n := targets[0]
		pid, err := in.c.stubPID(ctx, n)
		if err != nil {
			return nil, nil, err
		}
		sig := f.Signal
		if sig == "" {
			sig = "KILL"
		}
		if _, err := d.run(ctx, "exec", n.Container, "kill", "-"+sig, pid); err != nil {
			return nil, nil, fmt.Errorf("restart stub: %w", err)
		}
		return targets, func(context.Context) error { return nil }, nil
	default:
		return nil, nil, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if err := each(ctx, inj); err != nil {
		// Half-applied: heal what was done before reporting.
		_ = each(context.Background(), heal)
		return nil, nil, err
	}
	return targets, func(ctx context.Context) error { return each(ctx, heal) }, nil
}

// resolve turns f's targets (or the current leader, every server, every
// stub, the busiest stub) into nodes.
func (in *injector) resolve(ctx context.Context, f fault) ([]node, error) {
	switch f.Kind {
	case faultPauseAll, faultKillAll:
		return in.c.topo.Servers, nil
	case faultCutStubs:
		return in.c.topo.Stubs, nil
	}
	if f.Kind == faultIsolateStub && len(f.Targets) == 0 {
		n, err := in.c.busiestStub(ctx)
		if err != nil {
			// Isolating some stub still tests the rule; skipping would not.
			n = in.c.topo.Stubs[0]
			in.logf("isolate-stub: %v; isolating %s", err, n.Name)
		}
		return []node{n}, nil
	}
	if f.Kind == faultKillLeader || f.Kind == faultPartitionLeader {
		l, err := in.c.leader(ctx)
		if err != nil {
			return nil, err
		}
		return []node{l}, nil
	}
	var out []node
	for _, name := range f.Targets {
		found := false
		for _, n := range in.c.topo.all() {
			if n.Name == name {
				out = append(out, n)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown target %q", name)
		}
	}
	return out, nil
}

// record keeps rec for the report.
func (in *injector) record(rec injected) {
	in.mu.Lock()
	in.done = append(in.done, rec)
	in.mu.Unlock()
}

// results returns what was injected, in order of injection.
func (in *injector) results() []injected {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]injected(nil), in.done...)
}

func (in *injector) logf(format string, args ...any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fmt.Fprintf(in.out, "chaos: "+format+"\n", args...)
}

// healAll brings every container back: unpaused, started, connected, and
// every stub without blackhole routes.
func healAll(ctx context.Context, c *cluster) []error {
	var errs []error
	for _, n := range c.topo.all() {
		out, err := c.d.run(ctx, "inspect", "-f", "{{.State.Status}}{{range $k, $v := .NetworkSettings.Networks}} {{$k}}{{end}}", n.Container)
		if err != nil {
			errs = append(errs, fmt.Errorf("heal %s: %w", n.Name, err))
			continue
		}
		fields := strings.Fields(out)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "paused":
			_, err = c.d.run(ctx, "unpause", n.Container)
		case "exited", "created", "dead":
			_, err = c.d.run(ctx, "start", n.Container)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("heal %s: %w", n.Name, err))
		}
		connected := false
		for _, net := range fields[1:] {
			connected = connected || net == networkName
		}
		if !connected {
			if _, err := c.d.run(ctx, "network", "connect", "--ip", n.IP.String(), networkName, n.Container); err != nil {
				errs = append(errs, fmt.Errorf("heal %s: %w", n.Name, err))
			}
		}
	}
	for _, n := range c.topo.Stubs {
		if err := clearCuts(ctx, c.d, n); err != nil {
			errs = append(errs, fmt.Errorf("heal: %w", err))
		}
	}
	return errs
}

func names(ns []node) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return strings.Join(out, ",")
}

func since(start time.Time) string {
	return time.Since(start).Round(100 * time.Millisecond).String()
}
