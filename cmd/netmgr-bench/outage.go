package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/servertest"
)

const (
	// outageRounds is how often the full restart is measured (3 quick).
	outageRounds      = 5
	outageRoundsQuick = 3
	// outageMin is the shortest outage of a round; it lasts until every
	// stub holds every server dead too, so that the restarted servers
	// start in a pool of their own.
	outageMin = 10 * time.Second
	// outageSplitTimeout bounds the wait for every stub to hold every
	// server dead; memberlist's suspicion, slowed by its awareness of
	// failed probes, takes 5-45 s.
	outageSplitTimeout = 2 * time.Minute
)

// outageRound is what one full restart of the server group measured.
type outageRound struct {
	Leader string
	// Down is the kill of every server -> the first one restarted.
	Down time.Duration
	// Elected is the last server restarted -> a server first reported
	// itself leader (GET /v1/agent/self, polled).
	Elected time.Duration
	// Running is that report -> the first job running: a /bin/true job
	// submitted then, until WaitJob(started) returned.
	Running time.Duration
	// Committed is the same span in the servers' own times: the new
	// leader's leader-elected event -> the job's instance-started event.
	Committed time.Duration
	// Left is how many machine-left events were committed after the kill.
	Left int
}

func (r outageRound) String() string {
	return fmt.Sprintf("down %.1f s, %s leader %.2f s after the restart, first job running %.2f s later "+
		"(%.2f s by the servers' events), %d machines went down",
		r.Down.Seconds(), r.Leader, r.Elected.Seconds(), r.Running.Seconds(), r.Committed.Seconds(), r.Left)
}

// outageSuite measures, on a process cluster with default settings and
// stubs left running, the time from a leader elected after a full restart
// of the server group to the first job running.
func outageSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "outage")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "outage", servers: cfg.servers, stubs: cfg.stubs, settle: settleTimeout}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		return outageOn(ctx, cfg, c, cl)
	})
}

// outageOn is outageSuite on c, a ready cluster, through cl.
func outageOn(ctx context.Context, cfg config, c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
	rounds := outageRounds
	if cfg.quick {
		rounds = outageRoundsQuick
	}

	var rs []outageRound
	for r := range rounds {
		res, err := outageRoundRun(ctx, c, cl)
		if err != nil {
			return nil, fmt.Errorf("full restart round %d: %w", r+1, err)
		}
		fmt.Fprintf(os.Stderr, "outage: full restart %d/%d: %s\n", r+1, rounds, res)
		rs = append(rs, res)
	}
	return []figure{outageFigure(rs, cfg.servers, cfg.stubs)}, nil
}

// outageRoundRun SIGKILLs every server, keeps them down until every stub
// holds every server dead (and outageMin at least), restarts them on
// their data directories and addresses, and submits /bin/true the moment
// a server reports itself leader; it returns once every server has caught
// up again.
func outageRoundRun(ctx context.Context, c *servertest.ProcCluster, cl *client.Client) (outageRound, error) {
	var res outageRound
	if err := waitMachinesSteady(ctx, c, cl); err != nil {
		return res, err
	}
	after, err := lastEventIndex(ctx, cl)
	if err != nil {
		return res, err
	}
	for i := range c.Servers {
		if err := c.KillServer(i, syscall.SIGKILL); err != nil {
			return res, err
		}
	}
	killed := time.Now()
	err = waitFor(ctx, steadyPoll, outageSplitTimeout, func(ctx context.Context) bool {
		return time.Since(killed) >= outageMin && stubsSeeNoServer(ctx, c)
	})
	if err != nil {
		return res, fmt.Errorf("wait for every stub to hold every server dead: %w", err)
	}
	res.Down = time.Since(killed)
	for i := range c.Servers {
		if err := c.RestartServer(i); err != nil {
			return res, err
		}
	}
	restarted := time.Now()
	var e election
	err = waitFor(ctx, jobPoll, failoverTimeout, func(ctx context.Context) bool {
		var ok bool
		e, ok = askLeader(ctx, c, -1)
		return ok
	})
	if err != nil {
		return res, fmt.Errorf("no server reported itself leader after the restart: %w", err)
	}
	res.Leader, res.Elected = e.name, e.at.Sub(restarted)

	sctx, cancel := context.WithTimeout(ctx, failoverTimeout)
	defer cancel()
	sub, err := cl.Submit(sctx, client.SubmitRequest{
		Spec:           client.JobSpec{Binaries: map[string]string{client.AnyKey: trueBinary()}},
		IdempotencyKey: client.NewIdempotencyKey(),
	})
	if err != nil {
		return res, fmt.Errorf("submit after the restart: %w", err)
	}
	if _, err := cl.WaitJob(sctx, strconv.FormatUint(sub.ID, 10), client.WaitStarted); err != nil {
		return res, fmt.Errorf("job %d after the restart: %w", sub.ID, err)
	}
	res.Running = time.Since(e.at)

	evs, err := cl.Events(ctx, after)
	if err != nil {
		return res, fmt.Errorf("read events: %w", err)
	}
	res.steps(evs, sub.ID)
	leader, _ := c.Leader()
	for i := range c.Servers {
		if i == leader {
			continue
		}
		if err := c.WaitCaughtUp(i, settleTimeout); err != nil {
			return res, err
		}
	}
	return res, nil
}

// steps fills in, from the events since the kill, how many machines went
// down and the span from the last leader-elected event to job's
// instance-started event.
func (r *outageRound) steps(evs []client.Event, job uint64) {
	var elected, started time.Time
	for _, e := range evs {
		switch {
		case e.Kind == fsm.EventMachineLeft:
			r.Left++
		case e.Kind == fsm.EventLeaderElected:
			elected = e.At
		case e.Kind == fsm.EventInstanceStarted && e.Job == job && started.IsZero():
			started = e.At
		}
	}
	if !elected.IsZero() && !started.IsZero() {
		r.Committed = started.Sub(elected)
	}
}

// stubsSeeNoServer reports whether every stub's metrics say it holds no
// server alive in its gossip view.
func stubsSeeNoServer(ctx context.Context, c *servertest.ProcCluster) bool {
	hc := c.HTTPClient()
	for _, p := range c.Stubs {
		m, err := scrapeMetrics(ctx, hc, p.URL()+"/metrics")
		if err != nil {
			return false
		}
		if n, ok := m["netmgr_stub_gossip_servers"]; !ok || n != 0 {
			return false
		}
	}
	return true
}

// outageFigure summarizes the full-restart rounds as a figure.
func outageFigure(rs []outageRound, servers, stubs int) figure {
	var run, committed, down, elected []time.Duration
	left := 0
	for _, r := range rs {
		run = append(run, r.Running)
		committed = appendSeen(committed, r.Committed)
		down = append(down, r.Down)
		elected = append(elected, r.Elected)
		left += r.Left
	}
	med := func(ds []time.Duration) string {
		s := summarize(seconds(ds))
		return fmt.Sprintf("%s s (%s-%s)", num(s.Median), num(s.Min), num(s.Max))
	}
	return figure{
		Name:   "full restart of the server group: leader elected -> first job running",
		Unit:   "s",
		Sample: summarize(seconds(run)),
		Target: "p50 <= 2",
		Note: fmt.Sprintf("%d servers, %d stubs as processes, default settings, the stubs left running; each round "+
			"SIGKILLs every server, keeps them down until every stub holds every server dead (down %s), restarts "+
			"them on their data directories, and submits /bin/true the moment a server reports itself leader "+
			"(restart -> leader %s); by the servers' own events, leader-elected -> instance-started %s; "+
			"machines that went down: %d in %d rounds",
			servers, stubs, med(down), med(elected), med(committed), left, len(rs)),
	}
}
