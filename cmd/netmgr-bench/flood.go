package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/server/servertest"
)

// The flood suite's shape: floodRounds rounds, each floodJobs victim
// jobs unloaded and as many while floodClients flood (quick: fewer).
const (
	floodClients     = 8
	floodRounds      = 3
	floodRoundsQuick = 2
	floodJobs        = 20
	floodJobsQuick   = 10
	// floodMax bounds one flood phase, whatever the victim's jobs do.
	floodMax = 2 * time.Minute
	// floodWarmup is how long the flood runs before the victim's jobs:
	// past the burst, and past the first held refusals.
	floodWarmup = 3 * time.Second
	// floodCounted is the least time the flood's answers are counted
	// over, after the warmup: the held refusals make the flooders take
	// the bucket's tokens in one rush a second, which a window of a few
	// victim jobs would catch or miss.
	floodCounted = 5 * time.Second
	// floodUser is the user who floods; not root, so the limit applies.
	floodUser = "flooder"
)

// floodSuite measures whether one user's flood of the API starves the
// others (issue 34): floodClients clients of one user, each on its own
// connection, send GET /v1/machines to the leader as fast as it answers,
// ignoring 429 and its Retry-After as a hostile user would, while
// another user runs `netexec --wait started /bin/true` in a loop through
// the stub's socket. The victim's wall time per job is measured unloaded
// and under the flood, alternating by round, on the default limits
// (100 requests a second, bursts of 200), and then the same on a cluster
// whose servers have no rate limit (--user-rate 0), for comparison.
func floodSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "flood")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	netexec := filepath.Join(links, "netexec")
	if err := os.Symlink(bin, netexec); err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	limited, err := floodCluster(ctx, cfg, bin, netexec, filepath.Join(dir, "limited"), nil)
	if err != nil {
		return nil, err
	}
	unlimited, err := floodCluster(ctx, cfg, bin, netexec, filepath.Join(dir, "unlimited"), []string{"--user-rate", "0"})
	if err != nil {
		return nil, err
	}
	base, loaded := summarize(limited.unloaded), summarize(limited.flooded)
	obase, oloaded := summarize(unlimited.unloaded), summarize(unlimited.flooded)
	who := "the benchmark's user through the stub's socket"
	if me, err := user.Current(); err == nil && me.Username == "root" {
		who += " (root on a pool machine: exempt from the rate limit, and well within it anyway)"
	}
	rounds, jobs := floodShape(cfg)
	note := fmt.Sprintf("%d rounds of %d jobs unloaded then %d under the flood (after %v of it, counted over %v at least); victim: %s; flood: %d clients of user %s, each its own connection, GET /v1/machines to the leader in a loop ignoring 429; %d servers; p50 under flood / unloaded = %.2fx with the default limits, %.2fx with --user-rate 0",
		rounds, jobs, jobs, floodWarmup, floodCounted, who, floodClients, floodUser, cfg.servers, loaded.Median/base.Median, oloaded.Median/obase.Median)
	return []figure{
		{Name: "netexec --wait started /bin/true, unloaded", Unit: "ms", Sample: base, Note: note},
		{Name: fmt.Sprintf("netexec --wait started /bin/true, another user flooding from %d clients", floodClients), Unit: "ms",
			Sample: loaded, Target: fmt.Sprintf("p50 <= 2x unloaded (%.0f ms)", 2*base.Median)},
		{Name: "flood requests answered 200 per s", Unit: "req/s", Sample: summarize(limited.ok)},
		{Name: "flood requests refused 429 per s", Unit: "req/s", Sample: summarize(limited.refused)},
		{Name: "servers' CPU under the flood and the victim, all three", Unit: "ms/s", Sample: summarize(limited.serverCPU)},
		{Name: "flood clients' CPU (the benchmark process)", Unit: "ms/s", Sample: summarize(limited.flooderCPU)},
		{Name: "--user-rate 0: netexec --wait started /bin/true, unloaded", Unit: "ms", Sample: obase},
		{Name: fmt.Sprintf("--user-rate 0: the same, another user flooding from %d clients", floodClients), Unit: "ms", Sample: oloaded},
		{Name: "--user-rate 0: flood requests answered 200 per s", Unit: "req/s", Sample: summarize(unlimited.ok)},
		{Name: "--user-rate 0: servers' CPU under the flood and the victim", Unit: "ms/s", Sample: summarize(unlimited.serverCPU)},
		{Name: "--user-rate 0: flood clients' CPU", Unit: "ms/s", Sample: summarize(unlimited.flooderCPU)},
	}, nil
}

// floodShape returns the rounds and the victim's jobs per phase.
func floodShape(cfg config) (rounds, jobs int) {
	if cfg.quick {
		return floodRoundsQuick, floodJobsQuick
	}
	return floodRounds, floodJobs
}

// floodSamples are one cluster's measurements: the victim's wall times
// (ms) unloaded and flooded, and per round the flood's answers (a
// second) and the CPU the servers and the flooders used (ms a second).
type floodSamples struct {
	unloaded, flooded     []float64
	ok, refused           []float64
	serverCPU, flooderCPU []float64
}

// floodCluster starts a cluster in dir whose servers get serverArgs,
// measures the victim unloaded and flooded there, and stops it.
func floodCluster(ctx context.Context, cfg config, bin, netexec, dir string, serverArgs []string) (floodSamples, error) {
	spec := clusterSpec{suite: "flood", servers: cfg.servers, stubs: 1, serverArgs: serverArgs, database: benchDB}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, _ *client.Client) (floodSamples, error) {
		return floodOn(ctx, cfg, bin, netexec, dir, c)
	})
}

// floodOn is floodCluster's measuring on c, a ready cluster.
func floodOn(ctx context.Context, cfg config, bin, netexec, dir string, c *servertest.ProcCluster) (floodSamples, error) {
	var out floodSamples
	leader, _ := c.Leader()
	if leader < 0 {
		return out, fmt.Errorf("flood: no leader")
	}
	fl, err := newFlooder(c, dir, c.Servers[leader].HTTPAddr)
	if err != nil {
		return out, err
	}
	env := append(os.Environ(), c.Env()...)
	victim := func(n int) ([]float64, error) {
		var xs []float64
		for range n {
			d, err := victimJob(ctx, netexec, env)
			if err != nil {
				return nil, err
			}
			xs = append(xs, float64(d)/float64(time.Millisecond))
		}
		return xs, nil
	}
	rounds, jobs := floodShape(cfg)
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "flood: round %d of %d: %d jobs unloaded, %d under a flood from %d clients ...\n", r+1, rounds, jobs, jobs, floodClients)
		xs, err := victim(jobs)
		if err != nil {
			return out, err
		}
		out.unloaded = append(out.unloaded, xs...)
		var cpu [2]map[string]float64
		var self [2]float64
		marks := 0
		mark := func() {
			if marks < 2 {
				cpu[marks], self[marks] = clusterCPU(bin, c.Dir()), selfCPU()
			}
			marks++
		}
		ok, refused, el, err := fl.during(ctx, func() error {
			ys, err := victim(jobs)
			out.flooded = append(out.flooded, ys...)
			return err
		}, mark)
		if err != nil {
			return out, err
		}
		out.ok = append(out.ok, float64(ok)/el.Seconds())
		out.refused = append(out.refused, float64(refused)/el.Seconds())
		if cpu[0] != nil && cpu[1] != nil {
			out.serverCPU = append(out.serverCPU, (cpu[1]["server"]-cpu[0]["server"])/el.Seconds())
		}
		out.flooderCPU = append(out.flooderCPU, (self[1]-self[0])/el.Seconds())
	}
	return out, nil
}

// victimJob runs `netexec --wait started /bin/true` and returns its wall
// time.
func victimJob(ctx context.Context, netexec string, env []string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, netexec, "--wait", "started", trueBinary())
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("flood: netexec --wait started: %w: %s", err, out.String())
	}
	return time.Since(start), nil
}

// flooder sends the flood: floodClients HTTP clients of floodUser.
type flooder struct {
	url     string
	clients []*http.Client
	user    string // the insecure mode's user header; empty with TLS
}

// newFlooder returns the flood of floodUser against the server at addr:
// with TLS each client proves the user with a client certificate the
// cluster's CA issues (in dir); without, by the user header.
func newFlooder(c *servertest.ProcCluster, dir, addr string) (*flooder, error) {
	f := &flooder{url: "http://" + addr + "/v1/machines"}
	var tc *tls.Config
	if c.Secure() {
		ca, err := pki.LoadCA(filepath.Dir(c.CAFile()))
		if err != nil {
			return nil, fmt.Errorf("flood: load the CA: %w", err)
		}
		is, err := ca.Issue(pki.Identity{Role: pki.RoleClient, Name: floodUser}, nil, time.Hour)
		if err != nil {
			return nil, fmt.Errorf("flood: issue a client certificate: %w", err)
		}
		files, err := is.Write(filepath.Join(dir, "flooder"))
		if err != nil {
			return nil, fmt.Errorf("flood: write the client certificate: %w", err)
		}
		files.CA = c.CAFile()
		m, err := pki.Load(files)
		if err != nil {
			return nil, fmt.Errorf("flood: load the client certificate: %w", err)
		}
		tc = m.ClientConfig(pki.RoleServer)
		f.url = "https://" + addr + "/v1/machines"
	} else {
		f.user = floodUser
	}
	for range floodClients {
		f.clients = append(f.clients, &http.Client{
			Timeout:       10 * time.Second,
			Transport:     &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		})
	}
	return f, nil
}

// during floods for floodWarmup and then while fn runs, and at least
// floodCounted (at most floodMax in all); it returns how many flood
// requests were answered 200 and 429 after the warmup, and over how long.
// It calls mark as that window starts and as it ends.
func (f *flooder) during(ctx context.Context, fn func() error, mark func()) (ok, refused int64, el time.Duration, err error) {
	fctx, stop := context.WithTimeout(ctx, floodMax)
	defer stop()
	var nOK, nRefused, nOther atomic.Int64
	var wg sync.WaitGroup
	for _, hc := range f.clients {
		wg.Go(func() {
			for fctx.Err() == nil {
				req, err := http.NewRequestWithContext(fctx, http.MethodGet, f.url, nil)
				if err != nil {
					return
				}
				if f.user != "" {
					req.Header.Set(client.UserHeader, f.user)
				}
				resp, err := hc.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					nOK.Add(1)
				case http.StatusTooManyRequests:
					nRefused.Add(1)
				default:
					nOther.Add(1)
				}
			}
		})
	}
	select {
	case <-fctx.Done():
	case <-time.After(floodWarmup):
	}
	ok0, refused0 := nOK.Load(), nRefused.Load()
	mark()
	start := time.Now()
	err = fn()
	select {
	case <-fctx.Done():
	case <-time.After(time.Until(start.Add(floodCounted))):
	}
	el = time.Since(start)
	ok, refused = nOK.Load()-ok0, nRefused.Load()-refused0
	mark()
	stop()
	wg.Wait()
	if n := nOther.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "flood: %d flood requests answered neither 200 nor 429\n", n)
	}
	for _, hc := range f.clients {
		hc.CloseIdleConnections()
	}
	return ok, refused, el, err
}

// selfCPU is the CPU time this process has used, in ms.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / float64(time.Millisecond)
}
