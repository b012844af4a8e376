package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
)

// scalePoolPauseFor is how long every server is paused (issue 36 item 3:
// 8 s), longer than a 1,000 or 5,000 machines' lease and as long as
// 10,000's, so that the pool rides out the outage or stops its work.
const scalePoolPauseFor = 8 * time.Second

// poolPause is what pausing every server of a simulated pool measured.
type poolPause struct {
	work     int   // restartable instances running before the pause
	stopped  int   // of those, not running their first attempt after
	simStops int64 // attempts the simulator stopped for a lease run out uncovered
	// peerMisses and bareRounds are the simulator's witness rounds meanwhile
	// that another process did not answer in time, and that found no
	// majority cut off while a machine was near an outage.
	peerMisses, bareRounds int64
	accepted               time.Duration   // resume -> the first submit accepted
	allUp                  time.Duration   // resume -> every machine up on the leader
	seen                   steadyResult    // the machine states the leader showed meanwhile
	lost                   map[string]bool // machines it showed down or unreachable
}

// scalePoolPause runs restartable work on the pool, SIGSTOPs every
// server for scalePoolPauseFor and SIGCONTs them, then measures how soon
// a submit is accepted and every one of the n machines is up, which
// machines the leader showed other than up, and whether any restartable
// instance was stopped: the pool must ride the outage out (the stubs'
// witness, stub/outage_tree.go; the simulator's, stub/simpool/outage.go).
// dead, a machine killed before, is left out.
func scalePoolPause(ctx context.Context, g *gossipWatch, sim *poolSim, n int, dead string) (poolPause, error) {
	c := g.c
	res := poolPause{seen: steadyResult{notUp: make(map[string]bool), states: make(map[string]int)}, lost: make(map[string]bool)}
	cl, err := c.Client()
	if err != nil {
		return res, err
	}
	job, err := startPoolWork(ctx, cl, min(n, scalePoolWork))
	if err != nil {
		return res, err
	}
	res.work = len(job.Instances)
	before, err := sim.stats()
	if err != nil {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "scale: %d machines up, %d restartable instances running; pausing every server %v ...\n", n, res.work, scalePoolPauseFor)
	resume := func() {
		for _, s := range c.Servers {
			_ = syscall.Kill(s.PID(), syscall.SIGCONT)
		}
	}
	defer resume() // on every path: a paused group would hang the rest
	for _, s := range c.Servers {
		if err := syscall.Kill(s.PID(), syscall.SIGSTOP); err != nil {
			return res, fmt.Errorf("pause server %s: %w", s.Name, err)
		}
	}
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(scalePoolPauseFor):
	}
	resume()
	at := time.Now()
	if _, err := submitUntilAccepted(ctx, c, at); err != nil {
		return res, fmt.Errorf("submit after pausing every server: %w", err)
	}
	res.accepted = time.Since(at)
	w := &watchStates{r: &res.seen, since: make(map[string]time.Time)}
	_, err = scalePoolWait(ctx, "every machine up after the pause", func() (bool, error) {
		leader, err := g.leaderProc()
		if err != nil {
			return false, nil
		}
		res.seen.leader = leader.Name
		ms, err := g.machines(ctx, leader, true)
		if err != nil {
			return false, err
		}
		ms = slices.DeleteFunc(ms, func(m client.Machine) bool { return m.Name == dead })
		w.observe(ms, time.Now())
		for _, m := range ms {
			if m.State == client.MachineDown || m.State == client.MachineUnreachable {
				res.lost[m.Name] = true
			}
		}
		return countState(ms, client.MachineUp) >= n, nil
	})
	if err != nil {
		return res, err
	}
	res.allUp = time.Since(at)
	w.close(time.Now())

	ref := strconv.FormatUint(job.ID, 10)
	after, err := cl.Job(ctx, ref)
	if err != nil {
		return res, fmt.Errorf("read job %d: %w", job.ID, err)
	}
	attempts := make(map[int]uint64, len(job.Instances))
	for _, in := range job.Instances {
		attempts[in.Index] = in.Attempt
	}
	for _, in := range after.Instances {
		if in.State != client.InstanceRunning || in.Attempt != attempts[in.Index] {
			res.stopped++
		}
	}
	st, err := sim.stats()
	if err != nil {
		return res, err
	}
	res.simStops = st.stopped - before.stopped
	res.peerMisses, res.bareRounds = st.peerMisses-before.peerMisses, st.bareRounds-before.bareRounds
	// The group may still be settling after the resume (an election):
	// the kill is retried, and a failure costs the rest of the suite a
	// busier pool, not this figure.
	var killErr error
	if err := waitFor(ctx, time.Second, failoverTimeout, func(ctx context.Context) bool {
		_, killErr = cl.Kill(ctx, ref, client.KillRequest{})
		return killErr == nil
	}); err != nil {
		fmt.Fprintf(os.Stderr, "scale: job %d left running: %v\n", job.ID, killErr)
	}
	return res, nil
}

// figures reports r for a pool of size.
func (r poolPause) figures(size string) []figure {
	note := fmt.Sprintf("every server SIGSTOPped %v with %d restartable instances running, one a machine; the leader %s polled every %v after: %d episodes not up (%v), the longest %.1f s",
		scalePoolPauseFor, r.work, r.seen.leader, scalePoolPoll, r.seen.episodes, r.seen.states, r.seen.longest.Seconds())
	return []figure{
		{Name: "every server paused 8 s: restartable instances stopped or restarted, " + size, Unit: "instances", Sample: sample(float64(r.stopped)), Target: "0", Note: note},
		{Name: "every server paused 8 s: attempts the simulated machines stopped, " + size, Unit: "attempts", Sample: sample(float64(r.simStops)), Target: "0"},
		{Name: "every server paused 8 s: machines shown down or unreachable, " + size, Unit: "machines", Sample: sample(float64(len(r.lost))), Target: "0"},
		{Name: "every server paused 8 s: next submit accepted after the resume, " + size, Unit: "s", Sample: sample(r.accepted.Seconds())},
		{Name: "every server paused 8 s: every machine up after the resume, " + size, Unit: "s", Sample: sample(r.allUp.Seconds())},
	}
}
