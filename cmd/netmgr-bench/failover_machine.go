package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/servertest"
)

const (
	// jobPoll is how often a failover's outcome is polled.
	jobPoll = 10 * time.Millisecond
	// machinePoll is how often the lost machine's state is polled.
	machinePoll = 25 * time.Millisecond
)

// machineRound is what one machine-loss round measured. The steps are
// times since the kill; zero when the step was not seen.
type machineRound struct {
	Lost, New string // the machine killed and the one the new attempt runs on
	// Failover is kill -> the new attempt's CHILD_REGISTER committed,
	// as polling the job saw it.
	Failover time.Duration
	// Suspect is when GET /v1/machines first showed the machine suspect
	// (polled); Unreachable, Placed and Started the times the servers
	// stamped on the machine-unreachable event (its lease expired) and on
	// the new attempt's placed and started events.
	Suspect, Unreachable, Placed, Started time.Duration
	// Overlaps are the ledger lines showing two attempts alive at once.
	Overlaps []ledgerLine
}

func (r machineRound) String() string {
	s := fmt.Sprintf("%s lost, new attempt on %s after %.2f s (suspect %s, lease expired %s, placed %s, started %s)",
		r.Lost, r.New, r.Failover.Seconds(), step(r.Suspect), step(r.Unreachable), step(r.Placed), step(r.Started))
	if len(r.Overlaps) > 0 {
		s += fmt.Sprintf("; OVERLAP: %+v", r.Overlaps)
	}
	return s
}

// step formats a step's time since the kill, "-" when it was not seen.
func step(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// machineLossRound runs a restartable job, kills its whole machine, and
// measures until the job's instance runs elsewhere; then it brings the
// machine back and kills the job.
func machineLossRound(ctx context.Context, c *servertest.ProcCluster, cl *client.Client, dir string, round int) (machineRound, error) {
	var res machineRound
	if err := waitMachinesSteady(ctx, c, cl); err != nil {
		return res, err
	}
	ledger := filepath.Join(dir, fmt.Sprintf("ledger-%d", round+1))
	id, old, err := startLedgerJob(ctx, cl, ledger, fmt.Sprintf("failover%d", round+1))
	if err != nil {
		return res, err
	}
	ref := strconv.FormatUint(id, 10)
	res.Lost = old.Machine
	stub := slices.IndexFunc(c.Stubs, func(p *servertest.Proc) bool { return p.Name == old.Machine })
	if stub < 0 {
		return res, fmt.Errorf("job %s runs on %q, no stub of the cluster", ref, old.Machine)
	}
	after, err := lastEventIndex(ctx, cl)
	if err != nil {
		return res, err
	}

	wctx, stopWatch := context.WithCancel(ctx)
	states := watchMachine(wctx, cl, old.Machine)
	killed, err := c.KillStubMachine(stub)
	dead := time.Now()
	if err != nil {
		stopWatch()
		states()
		return res, err
	}
	var now client.Instance
	err = waitFor(ctx, jobPoll, failoverTimeout, func(ctx context.Context) bool {
		j, err := cl.Job(ctx, ref)
		if err != nil || len(j.Instances) == 0 {
			return false
		}
		now = j.Instances[0]
		return now.Attempt > old.Attempt && now.State == client.InstanceRunning && now.Machine != old.Machine
	})
	res.Failover = time.Since(killed)
	stopWatch()
	seen := states()
	if err != nil {
		return res, fmt.Errorf("job %s not running elsewhere (last seen %+v): %w: %w", ref, now, errFailover, err)
	}
	res.New = now.Machine
	res.Suspect = sinceKill(killed, seen[client.MachineSuspect])
	evs, err := cl.Events(ctx, after)
	if err != nil {
		return res, fmt.Errorf("read events: %w", err)
	}
	res.steps(evs, killed, id, now.Attempt)

	lines, err := waitLedgerStart(ctx, ledger, now.Attempt)
	if err != nil {
		return res, err
	}
	res.Overlaps = overlaps(lines, old.Attempt, dead)
	return res, endMachineRound(ctx, c, cl, stub, ref)
}

// waitMachinesSteady waits until every machine is up and stays up: a
// machine just back may still be flagged unreachable once more before
// its first lease renewal arrives.
func waitMachinesSteady(ctx context.Context, c *servertest.ProcCluster, cl *client.Client) error {
	return waitSteady(ctx, settleTimeout, func(ctx context.Context) (string, bool) {
		ms, err := cl.Machines(ctx)
		if err != nil || len(ms) != len(c.Stubs) {
			return "", false
		}
		for _, m := range ms {
			if m.State != client.MachineUp {
				return "", false
			}
		}
		return "all up", true
	})
}

// startLedgerJob submits the restartable ledger job and waits until it
// runs and its start is in the ledger (so that the overlap check can tell
// the attempts apart). It returns the job's id and its instance.
func startLedgerJob(ctx context.Context, cl *client.Client, ledger, name string) (uint64, client.Instance, error) {
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Name:     name,
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", ledgerScript, "failover", ledger},
		Restart:  client.RestartOnFailure,
	}})
	if err != nil {
		return 0, client.Instance{}, fmt.Errorf("submit: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, opTimeout)
	job, err := cl.WaitJob(wctx, strconv.FormatUint(sub.ID, 10), client.WaitStarted)
	cancel()
	if err != nil {
		return 0, client.Instance{}, fmt.Errorf("wait for job %d: %w", sub.ID, err)
	}
	in := job.Instances[0]
	if in.State != client.InstanceRunning {
		return 0, in, fmt.Errorf("job %d: instance is %s, want %s", sub.ID, in.State, client.InstanceRunning)
	}
	if _, err := waitLedgerStart(ctx, ledger, in.Attempt); err != nil {
		return 0, in, err
	}
	return sub.ID, in, nil
}

// waitLedgerStart waits until the ledger has the start of attempt, and
// returns its lines.
func waitLedgerStart(ctx context.Context, ledger string, attempt uint64) ([]ledgerLine, error) {
	var lines []ledgerLine
	err := waitFor(ctx, jobPoll, opTimeout, func(context.Context) bool {
		var err error
		lines, err = readLedger(ledger)
		_, ok := findStart(lines, attempt)
		return err == nil && ok
	})
	if err != nil {
		return nil, fmt.Errorf("wait for attempt %d in %s: %w", attempt, ledger, err)
	}
	return lines, nil
}

// lastEventIndex returns the index of the last committed event.
func lastEventIndex(ctx context.Context, cl *client.Client) (uint64, error) {
	evs, err := cl.Events(ctx, 0)
	if err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	return evs[len(evs)-1].Index, nil
}

// steps fills in the times since the kill of the lost machine's lease
// expiry and of attempt's placement and start from the events.
func (r *machineRound) steps(evs []client.Event, killed time.Time, job, attempt uint64) {
	for _, e := range evs {
		switch {
		case e.Kind == fsm.EventMachineUnreachable && e.Machine == r.Lost && r.Unreachable == 0:
			r.Unreachable = sinceKill(killed, e.At)
		case e.Job == job && e.Attempt == attempt && e.Kind == fsm.EventInstancePlaced:
			r.Placed = sinceKill(killed, e.At)
		case e.Job == job && e.Attempt == attempt && e.Kind == fsm.EventInstanceStarted:
			r.Started = sinceKill(killed, e.At)
		}
	}
}

// endMachineRound brings the lost machine's stub back on its data
// directory and kills the round's job.
func endMachineRound(ctx context.Context, c *servertest.ProcCluster, cl *client.Client, stub int, ref string) error {
	if err := c.RestartStub(stub); err != nil {
		return err
	}
	if err := c.WaitMachines(len(c.Stubs), settleTimeout); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := cl.Kill(ctx, ref, client.KillRequest{}); err != nil {
		return fmt.Errorf("kill job %s: %w", ref, err)
	}
	if _, err := cl.WaitJob(ctx, ref, client.WaitDone); err != nil {
		return fmt.Errorf("wait for job %s to end: %w", ref, err)
	}
	return nil
}

// readLedger reads and parses a ledger file; a missing file is empty.
func readLedger(path string) ([]ledgerLine, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return parseLedger(string(data))
}

// sinceKill returns at - killed, or 0 when at is zero.
func sinceKill(killed, at time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	return at.Sub(killed)
}

// watchMachine polls the machine's state in the servers' answer until ctx
// ends, and returns a function that stops it (waiting for the poller) and
// returns when each state was first seen.
func watchMachine(ctx context.Context, cl *client.Client, name string) func() map[string]time.Time {
	first := make(map[string]time.Time)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(machinePoll)
		defer t.Stop()
		for {
			if ms, err := cl.Machines(ctx); err == nil {
				for _, m := range ms {
					if m.Name == name && first[m.State].IsZero() {
						first[m.State] = time.Now()
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() map[string]time.Time {
		wg.Wait()
		return first
	}
}

// machineFigure summarizes the machine-loss rounds as a figure.
func machineFigure(rs []machineRound, servers int) figure {
	var fo, suspect, unreach, placed, started []time.Duration
	var bad []string
	for _, r := range rs {
		fo = append(fo, r.Failover)
		suspect = appendSeen(suspect, r.Suspect)
		unreach = appendSeen(unreach, r.Unreachable)
		placed = appendSeen(placed, r.Placed)
		started = appendSeen(started, r.Started)
		for _, l := range r.Overlaps {
			bad = append(bad, fmt.Sprintf("%s %s attempt %d at %s", l.Kind, l.Machine, l.Attempt, l.At.Format(time.StampMicro)))
		}
	}
	med := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "- (not seen)"
		}
		return fmt.Sprintf("%s s (%d of %d rounds)", num(summarize(seconds(ds)).Median), len(ds), len(rs))
	}
	note := fmt.Sprintf("%d servers, %d stubs as processes, default settings; each round kills the stub, "+
		"its supervisor host and job at once (SIGKILL); %d overlaps in the ledger (a new attempt started before the kill, "+
		"or the old one alive after it); medians since the kill: suspect in GET /v1/machines %s, lease expired %s, "+
		"placed %s, started (committed) %s",
		servers, failoverStubs, len(bad), med(suspect), med(unreach), med(placed), med(started))
	if len(bad) > 0 {
		note += "; OVERLAPS: " + strings.Join(bad, ", ")
	}
	return figure{
		Name:   "machine loss -> restartable instance running elsewhere",
		Unit:   "s",
		Sample: summarize(seconds(fo)),
		Target: "p50 <= 5",
		Note:   note,
	}
}

// appendSeen appends d to ds unless the step was not seen (zero).
func appendSeen(ds []time.Duration, d time.Duration) []time.Duration {
	if d == 0 {
		return ds
	}
	return append(ds, d)
}
