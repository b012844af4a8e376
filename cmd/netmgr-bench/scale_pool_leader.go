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
	"github.com/netmgr/netmgr/server/servertest"
)

// scalePoolWork is how many restartable instances run across the pool
// while its leader is killed (one per machine up to this), each a
// simulated attempt that runs for the simulator's --run-time.
const scalePoolWork = 1000

// scalePoolStreamShare is the share of the old leader's rate of renewals
// on streams the new leader must reach for the pool to count as back on
// streams, and scalePoolStreamWait bounds the wait for it.
const (
	scalePoolStreamShare = 0.9
	scalePoolStreamWait  = 2 * time.Minute
)

// streamRenewals and relayedRenewals are the series of lease renewals
// granted on streams, the leader's own and the followers' (relayed), and
// connsAccepted that of connections a server's API accepted.
const (
	streamRenewals  = `netmgr_server_lease_renewals_total{path="stream"}`
	relayedRenewals = `netmgr_server_lease_renewals_total{path="relay"}`
	connsAccepted   = `netmgr_server_http_connections_total`
)

// poolLeaderLoss is what killing a simulated pool's leader measured
// (issue 36 item 3).
type poolLeaderLoss struct {
	killed   string
	tries    int
	accepted time.Duration   // kill -> the first submit accepted
	allUp    time.Duration   // kill -> every machine up on the new leader
	seen     steadyResult    // the machine states the new leader showed meanwhile
	lost     map[string]bool // machines it showed down or unreachable
	stopped  int             // restartable instances not running their first attempt after
	work     int             // restartable instances running before the kill
	cores    float64         // the new leader's CPU from the kill to allUp
	// onStreams is kill -> the end of the first 1 s window in which the
	// new leader granted at least scalePoolStreamShare of baseRate on
	// streams: the pool back on streams.
	onStreams time.Duration
	baseRate  float64 // the old leader's renewals on streams a second, over 3 s before the kill
	// conns is how many connections each survivor accepted from the
	// kill to onStreams: over TLS, a handshake each.
	conns map[string]float64
}

// scalePoolLeaderKill runs restartable work on the pool, SIGKILLs the
// leader, and measures how soon a submit is accepted and every one of the
// n machines is up on the new leader, which machines it showed other than
// up meanwhile, and whether any restartable instance was stopped or
// started again; dead, a machine killed before, is left out. Then it
// restarts the killed server.
func scalePoolLeaderKill(ctx context.Context, g *gossipWatch, n int, dead string) (poolLeaderLoss, error) {
	c := g.c
	res := poolLeaderLoss{seen: steadyResult{notUp: make(map[string]bool), states: make(map[string]int)}, lost: make(map[string]bool)}
	cl, err := c.Client()
	if err != nil {
		return res, err
	}
	job, err := startPoolWork(ctx, cl, min(n, scalePoolWork))
	if err != nil {
		return res, err
	}
	res.work = len(job.Instances)
	killed, name, err := leaderWithFollowersCaughtUp(c)
	if err != nil {
		return res, err
	}
	res.killed = name
	if res.baseRate, err = renewalRate(ctx, g, c.Servers[killed], 3*time.Second); err != nil {
		return res, err
	}
	pids := map[string]int{}
	for i, p := range c.Servers {
		if i != killed {
			pids[p.Name] = p.PID()
		}
	}
	conns0, err := survivorConns(ctx, g, c, killed)
	if err != nil {
		return res, err
	}
	cpu := startCPU(pids)
	fmt.Fprintf(os.Stderr, "scale: %d machines up, %d restartable instances running; killing the leader %s ...\n", n, res.work, name)
	at := time.Now()
	if err := c.KillServer(killed, syscall.SIGKILL); err != nil {
		return res, err
	}
	tries, err := submitUntilAccepted(ctx, c, at)
	if err != nil {
		return res, fmt.Errorf("submit after killing %s: %w: %w", name, errFailover, err)
	}
	res.accepted, res.tries = time.Since(at), len(tries)

	w := &watchStates{r: &res.seen, since: make(map[string]time.Time)}
	var leader *servertest.Proc
	_, err = scalePoolWait(ctx, "every machine up on the new leader", func() (bool, error) {
		li, _ := c.Leader()
		if li < 0 || li == killed {
			return false, nil
		}
		leader = c.Servers[li]
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
	res.cores = cpu.used()[leader.Name]
	res.seen.leader = leader.Name
	err = waitFor(ctx, 10*time.Millisecond, scalePoolStreamWait, func(ctx context.Context) bool {
		rate, err := renewalRate(ctx, g, leader, time.Second)
		return err == nil && rate >= scalePoolStreamShare*res.baseRate
	})
	if err != nil {
		return res, fmt.Errorf("wait for the pool back on streams with %s: %w", leader.Name, err)
	}
	res.onStreams = time.Since(at)
	conns1, err := survivorConns(ctx, g, c, killed)
	if err != nil {
		return res, err
	}
	res.conns = make(map[string]float64, len(conns1))
	for name, n := range conns1 {
		res.conns[name] = n - conns0[name]
	}

	after, err := cl.Job(ctx, strconv.FormatUint(job.ID, 10))
	if err != nil {
		return res, fmt.Errorf("read job %d: %w", job.ID, err)
	}
	before := make(map[int]uint64, len(job.Instances))
	for _, in := range job.Instances {
		before[in.Index] = in.Attempt
	}
	for _, in := range after.Instances {
		if in.State != client.InstanceRunning || in.Attempt != before[in.Index] {
			res.stopped++
		}
	}
	if _, err := cl.Kill(ctx, strconv.FormatUint(job.ID, 10), client.KillRequest{}); err != nil {
		return res, fmt.Errorf("kill job %d: %w", job.ID, err)
	}
	if err := c.RestartServer(killed); err != nil {
		return res, err
	}
	return res, c.WaitCaughtUp(killed, settleTimeout)
}

// renewalRate returns how many renewals a second server s granted on
// streams, its own or its followers', over a window of about d.
func renewalRate(ctx context.Context, g *gossipWatch, s *servertest.Proc, d time.Duration) (float64, error) {
	count := func() (float64, time.Time, error) {
		m, err := scrapeMetrics(ctx, g.hc, s.URL()+"/metrics")
		return m[streamRenewals] + m[relayedRenewals], time.Now(), err
	}
	n0, t0, err := count()
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(d):
	}
	n1, t1, err := count()
	if err != nil {
		return 0, err
	}
	return (n1 - n0) / t1.Sub(t0).Seconds(), nil
}

// survivorConns returns how many connections each server of c but the
// one at killed has accepted so far, by name.
func survivorConns(ctx context.Context, g *gossipWatch, c *servertest.ProcCluster, killed int) (map[string]float64, error) {
	out := make(map[string]float64, len(c.Servers))
	for i, p := range c.Servers {
		if i == killed {
			continue
		}
		m, err := scrapeMetrics(ctx, g.hc, p.URL()+"/metrics")
		if err != nil {
			return nil, fmt.Errorf("read %s's connections: %w", p.Name, err)
		}
		out[p.Name] = m[connsAccepted]
	}
	return out, nil
}

// startPoolWork submits a restartable job of count instances, one a
// machine, and waits until every one runs.
func startPoolWork(ctx context.Context, cl *client.Client, count int) (client.Job, error) {
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Name:     "scale-work",
		Binaries: map[string]string{client.AnyKey: trueBinary()},
		Min:      count,
		Unique:   true,
		Restart:  client.RestartOnFailure,
	}})
	if err != nil {
		return client.Job{}, fmt.Errorf("submit the pool's work: %w", err)
	}
	var (
		job     client.Job
		readErr error // the last read's, for the error below
	)
	ref := strconv.FormatUint(sub.ID, 10)
	err = waitFor(ctx, time.Second, failoverTimeout, func(ctx context.Context) bool {
		var read client.Job
		if read, readErr = cl.Job(ctx, ref); readErr == nil {
			job = read
		}
		return readErr == nil && instanceStates(job)[client.InstanceRunning] == count
	})
	if err != nil {
		return job, fmt.Errorf("wait for job %d's %d instances to run (by state: %v; the last read: %v): %w", sub.ID, count, instanceStates(job), readErr, err)
	}
	return job, nil
}

// instanceStates counts job's instances by state.
func instanceStates(job client.Job) map[string]int {
	states := make(map[string]int)
	for _, in := range job.Instances {
		states[in.State]++
	}
	return states
}

// figures reports r for a pool of size.
func (r poolLeaderLoss) figures(size string) []figure {
	note := fmt.Sprintf("%s SIGKILLed with %d restartable instances running, one a machine; %d submits tried; "+
		"the new leader %s polled every %v: %d episodes not up (%v), the longest %.1f s; its CPU until all were up %.2f cores",
		r.killed, r.work, r.tries, r.seen.leader, scalePoolPoll, r.seen.episodes, r.seen.states, r.seen.longest.Seconds(), r.cores)
	return []figure{
		{Name: "leader SIGKILL: next submit accepted, " + size, Unit: "s", Sample: sample(r.accepted.Seconds()), Target: "<= 2 s", Note: note},
		{Name: "leader SIGKILL: every machine up on the new leader, " + size, Unit: "s", Sample: sample(r.allUp.Seconds()), Target: "<= 30 s"},
		{Name: "leader SIGKILL: machines shown down or unreachable, " + size, Unit: "machines", Sample: sample(float64(len(r.lost))), Target: "0"},
		{Name: "leader SIGKILL: restartable instances stopped or restarted, " + size, Unit: "instances", Sample: sample(float64(r.stopped)), Target: "0"},
		{Name: "leader SIGKILL: the pool back on lease streams with the new leader, " + size, Unit: "s", Sample: sample(r.onStreams.Seconds()),
			Note: fmt.Sprintf("the first 1 s window with %.0f%% of the old leader's %.0f renewals a second on streams", 100*scalePoolStreamShare, r.baseRate)},
		{Name: "leader SIGKILL: the new leader's CPU until every machine was up, " + size, Unit: "cores", Sample: sample(r.cores)},
		{Name: "leader SIGKILL: connections the new leader accepted until the pool was back on streams, " + size, Unit: "connections",
			Sample: sample(r.conns[r.seen.leader]), Note: fmt.Sprintf("over TLS a handshake each; by survivor: %v", r.conns)},
	}
}
