package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// gossipPool is one pool of the gossip suite: 3 servers and the sim
// processes, and how long the pool took to converge.
type gossipPool struct {
	c     *servertest.ProcCluster
	watch *gossipWatch
	sims  []*simProc
	// inPool and allUp are how long after the sims started every server's
	// memberlist held every stub, and every server showed every machine up.
	inPool, allUp time.Duration
}

// startGossipPool starts pool round of the suite (its files under dir):
// 3 servers, then gossipSims sim processes of per stubs each at once, and
// waits until it has converged. On an error the pool is stopped.
func startGossipPool(ctx context.Context, cfg config, bin, dir string, round, per int) (p *gossipPool, err error) {
	total := gossipSims * per
	fmt.Fprintf(os.Stderr, "gossip: pool %d: starting 3 servers ...\n", round+1)
	c, err := startCluster(cfg, bin, filepath.Join(dir, "cluster-"+strconv.Itoa(round)), 3, 0)
	if err != nil {
		return nil, err
	}
	p = &gossipPool{c: c}
	defer func() {
		if err != nil {
			fmt.Fprintf(os.Stderr, "process logs:\n%s%s", c.Logs(3000), simLogs(p.sims, 3000))
			p.stop()
			p = nil
		}
	}()
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return p, err
	}
	hc := c.HTTPClient()
	hc.Timeout = 5 * time.Second
	p.watch = &gossipWatch{c: c, hc: hc}

	// The stubs' certificates exist before the clock starts, as a real
	// machine's do before its stub starts.
	for i := range gossipSims {
		if err := issueSimCerts(c, dir, fmt.Sprintf("r%dg%d", round, i), per); err != nil {
			return p, err
		}
	}
	fmt.Fprintf(os.Stderr, "gossip: pool %d: %d stubs in %d sim processes ...\n", round+1, total, gossipSims)
	start := time.Now()
	var (
		mu   sync.Mutex // guards p.sims, appended to by concurrent starts
		errs = make([]error, gossipSims)
		wg   sync.WaitGroup
	)
	for i := range gossipSims {
		wg.Go(func() {
			prefix := fmt.Sprintf("r%dg%d", round, i)
			sp, err := startSim(c, bin, dir, prefix, per, "--log-level", "info")
			errs[i] = err
			if err == nil {
				mu.Lock()
				p.sims = append(p.sims, sp)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return p, err
		}
	}
	g := p.watch
	if p.inPool, err = g.waitAll(ctx, start, func(ctx context.Context, s *servertest.Proc) (bool, error) {
		n, err := g.members(ctx, s)
		return n >= total+len(c.Servers), err
	}); err != nil {
		return p, fmt.Errorf("gossip: wait for every server's pool to hold every stub: %w", err)
	}
	if p.allUp, err = g.waitAll(ctx, start, func(ctx context.Context, s *servertest.Proc) (bool, error) {
		ms, err := g.machines(ctx, s, true)
		return countState(ms, client.MachineUp) >= total, err
	}); err != nil {
		return p, fmt.Errorf("gossip: wait for every machine up on every server: %w", err)
	}
	return p, nil
}

// fail prints the pool's process logs and returns err, for the suite's
// errors after convergence.
func (p *gossipPool) fail(err error) ([]figure, error) {
	fmt.Fprintf(os.Stderr, "process logs:\n%s%s", p.c.Logs(3000), simLogs(p.sims, 3000))
	return nil, err
}

// stop stops the pool's sims, then its servers; a nil pool is stopped.
func (p *gossipPool) stop() {
	if p == nil {
		return
	}
	stopSims(p.sims)
	p.sims = nil
	p.c.Stop()
}
