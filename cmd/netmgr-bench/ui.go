package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The ui suite's pool (issue 21 point 5): uiMachines machines, joined by
// simulated stubs in waves of uiWave (one `netmgr sim` process each), of
// which the last uiLive stay up: the others are SIGKILLed once they have
// joined, and stay in the machine table as lost. A thousand live stubs
// gossiping and renewing leases twice a second would need more than the
// 2 cores this runs on (at 1,000 live stubs each sim process grew past
// 2 GB and no machine came up). The live machines have one slot each and
// their jobs run an hour (longer than the suite). uiJobs jobs: one running
// on every live machine, the rest held after one of those (an afterany
// dependency), spread over uiQueues queues and the default one.
const (
	uiMachines = 1000
	uiWave     = 125
	uiLive     = 250
	uiJobs     = 10_000
	uiRunTime  = time.Hour
	// uiBatch is the jobs of one batched submit (netexec --batch's limit).
	uiBatch = client.MaxBatchJobs
)

// uiQueues are the queues the suite's jobs are spread over, besides the
// default one.
var uiQueues = []string{"batch", "night", "short"}

// uiPool is the suite's cluster and what it holds.
type uiPool struct {
	c    *servertest.ProcCluster
	sims []*simProc
	cl   *client.Client
	// token signs the page's user in; user is that user, an admin.
	token, user string
	// running and held are the jobs' ids by state; running[0] is the job
	// whose detail the browser opens.
	running, held []uint64
}

// uiSuite measures the dashboard at 10,000 jobs and 1,000 machines: each
// view's load in headless Chromium (ui_browser.go), and what a hundred
// open pages cost a server next to a hundred polling ones (ui_streams.go).
func uiSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "ui")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	p, err := startUIPool(ctx, cfg, bin, dir)
	if p != nil {
		defer p.stop()
	}
	if err != nil {
		return nil, err
	}
	// The page's server: a follower, so that the leader's own work is
	// not in its figures (reads are answered where they land).
	li, _ := p.c.Leader()
	page := p.c.Servers[(li+1)%len(p.c.Servers)]
	setup := fmt.Sprintf("3 servers (TLS, processes), %d machines (simulated stubs; %d up, the others joined and were killed), "+
		"%d jobs (%d running, one a live machine; %d held after one of those) in %d queues; page server %s, a follower",
		uiMachines, uiLive, uiJobs, len(p.running), len(p.held), len(uiQueues)+1, page.Name)
	figs := browserFigures(ctx, cfg, p, page, dir)
	figs[0].Note = setup + "; " + figs[0].Note
	sf, err := streamFigures(ctx, cfg, p, page)
	if err != nil {
		return p.fail(err)
	}
	return append(figs, sf...), nil
}

// startUIPool starts the cluster, the simulated stubs and the jobs, and
// issues the page's token. On an error it returns what it started, to be
// stopped.
func startUIPool(ctx context.Context, cfg config, bin, dir string) (*uiPool, error) {
	fmt.Fprintf(os.Stderr, "ui: starting 3 servers and %d simulated stubs ...\n", uiMachines)
	c, err := startCluster(cfg, bin, filepath.Join(dir, "cluster"), 3, 0)
	if err != nil {
		return nil, err
	}
	p := &uiPool{c: c}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return p, p.logs(err)
	}
	if p.cl, err = userClient(c); err != nil {
		return p, p.logs(err)
	}
	if err := p.joinWaves(ctx, bin, dir); err != nil {
		return p, p.logs(err)
	}
	if err := p.signIn(ctx); err != nil {
		return p, p.logs(err)
	}
	fmt.Fprintf(os.Stderr, "ui: submitting %d jobs in batches of %d ...\n", uiJobs, uiBatch)
	start := time.Now()
	if err := p.fill(ctx); err != nil {
		return p, p.logs(err)
	}
	fmt.Fprintf(os.Stderr, "ui: %d jobs in %.1f s\n", uiJobs, time.Since(start).Seconds())
	return p, nil
}

// signIn makes the page's user an admin (the database's admin_id), adds
// the queues and issues the user's token. As root, the user is nobody
// (a token never acts for root).
func (p *uiPool) signIn(ctx context.Context) error {
	p.user = "nobody"
	if os.Geteuid() != 0 {
		me, err := user.Current()
		if err != nil {
			return fmt.Errorf("ui sign-in: %w", err)
		}
		p.user = me.Username
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	db, err := p.cl.Database(ctx)
	if err != nil {
		return fmt.Errorf("ui sign-in: read the database: %w", err)
	}
	if !strings.Contains(db.Text, strings.TrimSpace(benchDatabase)) {
		db.Text += "\n" + benchDatabase
	}
	db.Text += "\nadmin_id " + p.user + "\n"
	if _, err := p.cl.LoadDatabase(ctx, db); err != nil {
		return fmt.Errorf("ui sign-in: load the database: %w", err)
	}
	for i, q := range uiQueues {
		if _, err := p.cl.SetQueue(ctx, client.Queue{Name: q, Priority: i}); err != nil {
			return fmt.Errorf("ui sign-in: set queue %s: %w", q, err)
		}
	}
	tok, err := p.cl.CreateToken(ctx, client.TokenRequest{User: p.user})
	if err != nil {
		return fmt.Errorf("ui sign-in: create a token: %w", err)
	}
	p.token = tok.Token
	return nil
}

// fill submits the jobs in batches: first one running job a machine,
// waited for until every one runs, then the held ones.
func (p *uiPool) fill(ctx context.Context) error {
	job := trueBinary()
	spec := func(i int) client.JobSpec {
		s := client.JobSpec{Binaries: map[string]string{client.AnyKey: job}, Name: "ui" + strconv.Itoa(i)}
		if q := i % (len(uiQueues) + 1); q > 0 {
			s.Queue = uiQueues[q-1]
		}
		if i >= uiLive {
			s.After = []string{strconv.FormatUint(p.running[i%len(p.running)], 10)}
		}
		return s
	}
	for from, to := 0, uiLive; from < uiJobs; from, to = to, min(to+uiBatch, uiJobs) {
		reqs := make([]client.SubmitRequest, 0, to-from)
		for i := from; i < to; i++ {
			reqs = append(reqs, client.SubmitRequest{Spec: spec(i)})
		}
		bctx, cancel := context.WithTimeout(ctx, opTimeout)
		resps, err := p.cl.SubmitBatch(bctx, reqs)
		cancel()
		if err != nil {
			return fmt.Errorf("ui: submit jobs %d-%d: %w", from, from+len(reqs)-1, err)
		}
		for _, r := range resps {
			if from < uiLive {
				p.running = append(p.running, r.ID)
			} else {
				p.held = append(p.held, r.ID)
			}
		}
		if from == 0 {
			if err := p.waitRunning(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitRunning waits until every running job's instance has started.
func (p *uiPool) waitRunning(ctx context.Context) error {
	return pollAPI(ctx, "every running job started", func(ctx context.Context) (bool, error) {
		jobs, err := p.cl.Jobs(ctx)
		n := 0
		for _, j := range jobs {
			if j.State == client.JobRunning {
				n++
			}
		}
		return n >= len(p.running), err
	})
}

// joinWaves joins uiMachines machines in waves of uiWave, each wave's
// stubs in a sim process of their own: once a wave's machines are all
// up, the wave before the last uiLive machines' is SIGKILLed. It returns
// once the live machines are up and the others are no longer.
func (p *uiPool) joinWaves(ctx context.Context, bin, dir string) error {
	waves := uiMachines / uiWave
	for i := range waves {
		sim, err := startSim(p.c, bin, dir, "ui"+strconv.Itoa(i), uiWave, "--slots", "1", "--run-time", uiRunTime.String())
		if err != nil {
			return err
		}
		p.sims = append(p.sims, sim)
		if err := p.waitMachines(ctx, func(ms []client.Machine) bool { return upCount(ms, sim.names) == len(sim.names) }); err != nil {
			return fmt.Errorf("ui: wave %d: %w", i, err)
		}
		if k := i - uiLive/uiWave; k >= 0 {
			p.sims[k].kill()
		}
		fmt.Fprintf(os.Stderr, "ui: wave %d of %d joined\n", i+1, waves)
	}
	p.sims = p.sims[waves-uiLive/uiWave:]
	return p.waitMachines(ctx, func(ms []client.Machine) bool {
		up := 0
		for _, m := range ms {
			switch m.State {
			case client.MachineUp:
				up++
			case client.MachineSuspect:
				return false
			}
		}
		return len(ms) == uiMachines && up == uiLive
	})
}

// upCount returns how many of the machines named names ms shows up.
func upCount(ms []client.Machine, names []string) int {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	n := 0
	for _, m := range ms {
		if want[m.Name] && m.State == client.MachineUp {
			n++
		}
	}
	return n
}

// waitMachines polls the machine list until ok holds.
func (p *uiPool) waitMachines(ctx context.Context, ok func([]client.Machine) bool) error {
	return pollAPI(ctx, "the machines", func(ctx context.Context) (bool, error) {
		ms, err := p.cl.Machines(ctx)
		return err == nil && ok(ms), err
	})
}

// pollAPI calls cond every second, each call with opTimeout, until it
// holds, for 5 minutes (pollEvery); the error names what it waited for
// and cond's last error.
func pollAPI(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	var last error
	err := pollEvery(ctx, time.Second, 5*time.Minute, func() bool {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		ok, err := cond(cctx)
		last = err
		return ok
	})
	if err != nil {
		return fmt.Errorf("ui: wait for %s (last error %v): %w", what, last, err)
	}
	return nil
}

// logs prints the processes' logs and returns err.
func (p *uiPool) logs(err error) error {
	fmt.Fprintf(os.Stderr, "process logs:\n%s%s", p.c.Logs(3000), simLogs(p.sims, 3000))
	return err
}

// fail is logs for the suite's return.
func (p *uiPool) fail(err error) ([]figure, error) { return nil, p.logs(err) }

// stop stops the sims, then the servers.
func (p *uiPool) stop() {
	stopSims(p.sims)
	p.c.Stop()
}
