package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
)

// ack is a submit a server acknowledged: the job must exist from then on.
type ack struct {
	ID        uint64
	Restart   string
	Instances int
	Seconds   int
	FailFirst bool
	At        time.Time
	// After and AfterOK are the dependencies the job was submitted with
	// (a chain's second and third jobs): checkDeps judges them.
	After   []uint64
	AfterOK []uint64
	// Cron marks the workload's cron job (cronSchedule), a template with
	// no instances of its own: checkCron judges its firings.
	Cron bool
}

// cronSchedule is the schedule of the workload's one cron job: a firing
// every cronPeriod, each run a 1 s job, runs allowed to overlap, a time
// missed while no server led run once late (catchup=last).
const (
	cronSchedule = "@every 4s"
	cronPeriod   = 4 * time.Second
)

// chainEvery is how many ticks pass between two dependency chains: every
// chainEvery-th tick submits a chain A, B afterok=A, C after=B instead of
// one job.
const chainEvery = 10

// maxInFlight bounds submits waiting for an answer (during an election
// they wait); a tick that finds them all busy is skipped and counted.
const maxInFlight = 16

// workload submits a steady stream of jobs: restartable and not, short
// (1-3 s) and long (20-60 s), each running docker/job.sh.
type workload struct {
	cli  *client.Client
	rate time.Duration
	rng  *rand.Rand // used by run's goroutine only

	mu      sync.Mutex // guards acks, failed, skipped, lastErr
	acks    []ack
	failed  int
	skipped int
	lastErr error
}

// newWorkload returns a workload whose job mix is drawn from seed.
func newWorkload(cli *client.Client, rate time.Duration, seed int64) *workload {
	return &workload{cli: cli, rate: rate, rng: rand.New(rand.NewPCG(uint64(seed), 0x776f726b))}
}

// run submits one job every rate until ctx ends, then waits for the
// submits still in flight.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	w.submitCron()
	sem := make(chan struct{}, maxInFlight)
	tick := time.NewTicker(w.rate)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var links []link
		if n%chainEvery == 0 {
			links = w.drawChain()
		} else {
			a, req := w.draw()
			links = []link{{a: a, req: req}}
		}
		select {
		case sem <- struct{}{}:
		default:
			w.mu.Lock()
			w.skipped++
			w.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.submitChain(links)
		}()
	}
}

// link is one job of a chain: its ack as drawn, its request, and how it
// depends on the link before it (none, after or afterok).
type link struct {
	a   ack
	req client.SubmitRequest
	dep string
}

// submitChain submits links in order, each naming the job the one before
// it got, and stops at the first submit that fails (a link cannot name a
// job that does not exist). A single job is a chain of one.
func (w *workload) submitChain(links []link) {
	var prev uint64
	for _, l := range links {
		switch l.dep {
		case depAfter:
			l.req.Spec.After, l.a.After = []string{strconv.FormatUint(prev, 10)}, []uint64{prev}
		case depAfterOK:
			l.req.Spec.AfterOK, l.a.AfterOK = []string{strconv.FormatUint(prev, 10)}, []uint64{prev}
		}
		id, ok := w.submit(l.a, l.req)
		if !ok {
			return
		}
		prev = id
	}
}

// submit sends one job and returns its id. It does not use run's context:
// a submit that has started is seen through, so an acknowledgement is
// never dropped.
func (w *workload) submit(a ack, req client.SubmitRequest) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	resp, err := w.cli.Submit(ctx, req)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failed++
		w.lastErr = err
		return 0, false
	}
	a.ID, a.At = resp.ID, time.Now()
	w.acks = append(w.acks, a)
	return a.ID, true
}

// draw picks the next job.
func (w *workload) draw() (ack, client.SubmitRequest) {
	r := w.rng
	a := ack{Instances: 1, Seconds: 1 + r.IntN(3)}
	if r.Float64() < 0.2 {
		a.Instances = 2
	}
	if r.Float64() < 0.12 {
		a.Seconds = 20 + r.IntN(41)
	}
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sh"}}
	switch p := r.Float64(); {
	case p < 0.4:
		a.Restart = client.RestartNo
		a.FailFirst = r.Float64() < 0.1
	case p < 0.75:
		a.Restart = client.RestartOnFailure
		a.FailFirst = r.Float64() < 0.5
		spec.MaxRestarts = 5
	default:
		a.Restart = client.RestartAlways
		spec.MaxRestarts = 1 + r.IntN(2)
		if a.Seconds > 3 {
			spec.MaxRestarts = 1
		}
	}
	fail := "0"
	if a.FailFirst {
		fail = "1"
	}
	spec.Restart = a.Restart
	spec.Min = a.Instances
	spec.Args = []string{"/chaos/job.sh", strconv.Itoa(a.Seconds), fail}
	return a, client.SubmitRequest{Spec: spec, IdempotencyKey: client.NewIdempotencyKey()}
}

// submitCron submits the workload's cron job (cronSchedule).
func (w *workload) submitCron() {
	spec := client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"/chaos/job.sh", "1", "0"},
		Restart:  client.RestartNo,
		Min:      1,
		Cron:     cronSchedule,
		Catchup:  client.CatchupLast,
		Overlap:  client.OverlapAllow,
	}
	w.submit(ack{Restart: client.RestartNo, Cron: true}, client.SubmitRequest{Spec: spec, IdempotencyKey: client.NewIdempotencyKey()})
}

// endCron ends the schedule of the workload's cron job, once the faults
// are healed, and returns its runs, for the drain to wait for. An error
// is returned with the runs known so far.
func endCron(ctx context.Context, cli *client.Client, acks []ack) ([]ack, error) {
	var runs []ack
	for _, a := range acks {
		if !a.Cron {
			continue
		}
		id := strconv.FormatUint(a.ID, 10)
		if _, err := cli.Kill(ctx, id, client.KillRequest{}); err != nil {
			return runs, fmt.Errorf("end the cron job's schedule: %w", err)
		}
		j, err := cli.Job(ctx, id)
		if err != nil {
			return runs, fmt.Errorf("read the cron job: %w", err)
		}
		if j.Cron != nil {
			for _, r := range j.Cron.Runs {
				runs = append(runs, ack{ID: r, Instances: 1, Restart: client.RestartNo})
			}
		}
	}
	return runs, nil
}

// The dependency kinds the chains use, as the job language names them.
const (
	depAfter   = "after"
	depAfterOK = "afterok"
)

// drawChain picks a dependency chain: A (no restart; fails in a third of
// the chains, so that B is cancelled), B afterok=A (restart on failure),
// C after=B (runs however B ended, cancelled included). Each runs 1-3 s.
func (w *workload) drawChain() []link {
	r := w.rng
	job := func(restart string, fail bool, dep string) link {
		a := ack{Instances: 1, Seconds: 1 + r.IntN(3), Restart: restart, FailFirst: fail}
		spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Restart: restart, Min: 1}
		if restart == client.RestartOnFailure {
			spec.MaxRestarts = 5
		}
		f := "0"
		if fail {
			f = "1"
		}
		spec.Args = []string{"/chaos/job.sh", strconv.Itoa(a.Seconds), f}
		return link{a: a, req: client.SubmitRequest{Spec: spec, IdempotencyKey: client.NewIdempotencyKey()}, dep: dep}
	}
	return []link{
		job(client.RestartNo, r.Float64() < 0.33, ""),
		job(client.RestartOnFailure, r.Float64() < 0.3, depAfterOK),
		job(client.RestartNo, false, depAfter),
	}
}

// results returns the acknowledged submits and the failure counts.
func (w *workload) results() (acks []ack, failed, skipped int, lastErr error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ack(nil), w.acks...), w.failed, w.skipped, w.lastErr
}

// drain waits until every acknowledged job has ended (no instance queued,
// placed or running) or timeout passes; it reports progress to out.
func drain(ctx context.Context, cli *client.Client, acks []ack, timeout time.Duration, out io.Writer) error {
	want := map[uint64]bool{}
	for _, a := range acks {
		want[a.ID] = true
	}
	deadline := time.Now().Add(timeout)
	lastReport := time.Now()
	for {
		jobs, err := cli.Jobs(ctx)
		open := len(want)
		if err == nil {
			open = 0
			for _, j := range jobs {
				if want[j.ID] && !client.JobReached(j, client.WaitDone) {
					open++
				}
			}
			if open == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			return fmt.Errorf("drain: %d of %d jobs still unfinished after %s", open, len(want), timeout)
		}
		if time.Since(lastReport) > 15*time.Second {
			fmt.Fprintf(out, "chaos: draining: %d of %d jobs unfinished\n", open, len(want))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain: %w", ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
