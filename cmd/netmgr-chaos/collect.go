package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// uptime reads the ledger clock: seconds since boot, from /proc/uptime.
func uptime() (float64, error) {
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, fmt.Errorf("read clock: %w", err)
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, fmt.Errorf("read clock: empty /proc/uptime")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("read clock: %w", err)
	}
	return v, nil
}

// ledgerClock returns the conversion from wall-clock time to the ledger
// clock, measured now.
func ledgerClock() (clock, error) {
	up, err := uptime()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return func(t time.Time) float64 { return up + t.Sub(now).Seconds() }, nil
}

// readLedger copies the ledger out of the ledger container as a tar
// stream, keeps a copy in dir and parses it.
func readLedger(ctx context.Context, d *docker, dir string) ([]record, []string, error) {
	out, err := d.run(ctx, "exec", ledgerContainer, "tar", "-C", "/ledger", "-cf", "-", ".")
	if err != nil {
		return nil, nil, fmt.Errorf("read ledger: %w", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "ledger.tar"), []byte(out), 0o644)
	return readLedgerTar(strings.NewReader(out))
}

// consistentJobs reads the jobs from the leader (the client follows a
// follower's redirect), retrying while the group elects.
func consistentJobs(ctx context.Context, cli *client.Client) (map[uint64]client.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		jobs, err := cli.Jobs(ctx)
		if err == nil {
			m := make(map[uint64]client.Job, len(jobs))
			for _, j := range jobs {
				m[j.ID] = j
			}
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read jobs: %w", err)
		case <-time.After(2 * time.Second):
		}
	}
}

// readView reads one server's own copy of the jobs (?stale) through its
// published port, as the cluster's client does (TLS and a client
// certificate, or the insecure mode's header).
func readView(ctx context.Context, c *cluster, s node) serverView {
	v := serverView{Name: s.Name}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s127.0.0.1:%d/v1/jobs?stale", c.scheme, s.HostPort), nil)
	if err != nil {
		v.Err = err
		return v
	}
	req.Header.Set(client.UserHeader, chaosUser)
	hc := *c.hc
	hc.Timeout = 15 * time.Second
	resp, err := hc.Do(req)
	if err != nil {
		v.Err = err
		return v
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		v.Err = err
		return v
	}
	if resp.StatusCode != http.StatusOK {
		v.Err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
		return v
	}
	var jobs []client.Job
	if err := json.Unmarshal(data, &jobs); err != nil {
		v.Err = fmt.Errorf("decode jobs: %w", err)
		return v
	}
	v.Index, v.Jobs = client.ParseIndex(resp.Header), len(jobs)
	v.Hash, v.Err = hashJobs(jobs)
	return v
}

// compareServers reads every server's jobs until all agree at one index
// or timeout passes, and returns the last round's verdict and views.
func compareServers(ctx context.Context, c *cluster, timeout time.Duration) ([]violation, []serverView) {
	deadline := time.Now().Add(timeout)
	for {
		var views []serverView
		for _, s := range c.topo.Servers {
			views = append(views, readView(ctx, c, s))
		}
		vs := compareViews(views)
		if len(vs) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return vs, views
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// orphans lists the processes left in each stub container; it looks again
// for a few seconds while any are found, so a job's group being reaped
// right now is not reported.
func orphans(ctx context.Context, d *docker, t topology) []violation {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var vs []violation
		for _, s := range t.Stubs {
			out, err := d.run(ctx, "exec", s.Container, "sh", "-c", psScript)
			if err != nil {
				vs = append(vs, violation{Kind: vCheck, Instance: -1, Detail: fmt.Sprintf("list processes of %s: %v", s.Name, err)})
				continue
			}
			left, err := leftovers(out)
			if err != nil {
				vs = append(vs, violation{Kind: vCheck, Instance: -1, Detail: fmt.Sprintf("%s: %v", s.Name, err)})
				continue
			}
			for _, p := range left {
				vs = append(vs, violation{Kind: vOrphan, Instance: -1,
					Detail: fmt.Sprintf("%s: pid %s (parent %s, %s) still there: %s", s.Name, p.PID, p.PPID, p.Stat, p.Args)})
			}
		}
		if len(vs) == 0 || time.Now().After(deadline) {
			return vs
		}
		select {
		case <-ctx.Done():
			return vs
		case <-time.After(2 * time.Second):
		}
	}
}
