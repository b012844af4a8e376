package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// cluster is the running containers and a client for the servers'
// published API ports.
type cluster struct {
	d    *docker
	topo topology
	cli  *client.Client
	// hc and scheme make the checker's own requests to one server: over
	// TLS with the checker's client certificate, or plain with -insecure.
	hc     *http.Client
	scheme string
}

// newCluster returns a cluster whose client reaches every server through
// its port published on 127.0.0.1, as chaosUser: by the client
// certificate in sec, or by the insecure mode's header for a nil sec.
// Requests time out after 10 s, so a paused server costs one try, not the
// client's default 70 s.
func newCluster(d *docker, t topology, sec *security) (*cluster, error) {
	var addrs []string
	for _, s := range t.Servers {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", s.HostPort))
	}
	c := &cluster{d: d, topo: t, hc: &http.Client{Timeout: 10 * time.Second}, scheme: "http://"}
	opts := []client.Option{client.WithUser(chaosUser), client.WithRetryFor(30 * time.Second)}
	if sec != nil {
		c.hc.Transport = client.NewTLSTransport(sec.checker, pki.RoleServer)
		c.scheme = "https://"
		opts = append(opts, client.WithHTTPS())
	}
	cli, err := client.New(addrs, append(opts, client.WithHTTPClient(c.hc))...)
	if err != nil {
		return nil, fmt.Errorf("new cluster: %w", err)
	}
	c.cli = cli
	return c, nil
}

// waitReady waits until the group has a leader and every stub is an up
// machine.
func (c *cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if _, err := c.leader(ctx); err != nil {
			last = err.Error()
		} else if ms, err := c.cli.Machines(ctx); err != nil {
			last = err.Error()
		} else {
			up := 0
			for _, m := range ms {
				if m.State == client.MachineUp {
					up++
				}
			}
			if up >= len(c.topo.Stubs) {
				return nil
			}
			last = fmt.Sprintf("%d of %d machines up", up, len(c.topo.Stubs))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for cluster: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("wait for cluster: not ready after %s: %s", timeout, last)
}

// leader returns the server that is leader in the highest term any
// server reports.
func (c *cluster) leader(ctx context.Context) (node, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ss, err := c.cli.Servers(ctx)
	if err != nil {
		return node{}, fmt.Errorf("find leader: %w", err)
	}
	var best client.Server
	for _, s := range ss {
		if s.Role == "leader" && s.Term >= best.Term {
			best = s
		}
	}
	if best.Name == "" {
		return node{}, fmt.Errorf("find leader: no server reports itself leader")
	}
	n, ok := c.topo.server(best.Name)
	if !ok {
		return node{}, fmt.Errorf("find leader: unknown server %q", best.Name)
	}
	return n, nil
}

// busiestStub returns the stub running the most attempts of restartable
// jobs now, as the database says.
func (c *cluster) busiestStub(ctx context.Context) (node, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	jobs, err := c.cli.Jobs(ctx)
	if err != nil {
		return node{}, fmt.Errorf("find the busiest stub: %w", err)
	}
	return busiest(jobs, c.topo.Stubs), nil
}

// busiest returns the stub with the most running instances of
// restartable jobs; the first stub on a tie, or when none runs any.
func busiest(jobs []client.Job, stubs []node) node {
	count := map[string]int{}
	for _, j := range jobs {
		if !restartable(j.Spec) {
			continue
		}
		for _, in := range j.Instances {
			if in.State == client.InstanceRunning {
				count[in.Machine]++
			}
		}
	}
	best := stubs[0]
	for _, n := range stubs[1:] {
		if count[n.Name] > count[best.Name] {
			best = n
		}
	}
	return best
}

// stubPID returns the pid of the netmgr stub process in a stub container.
func (c *cluster) stubPID(ctx context.Context, n node) (string, error) {
	out, err := c.d.run(ctx, "exec", n.Container, "cat", "/run/stub.pid")
	if err != nil {
		return "", fmt.Errorf("stub pid of %s: %w", n.Name, err)
	}
	return strings.TrimSpace(out), nil
}

// saveLogs writes every container's log into dir.
func (c *cluster) saveLogs(ctx context.Context, dir string) {
	for _, n := range c.topo.all() {
		out, err := runCombined(ctx, "docker", "logs", "-t", n.Container)
		if err != nil {
			out = append(out, []byte("\nnetmgr-chaos: docker logs: "+err.Error()+"\n")...)
		}
		_ = os.WriteFile(filepath.Join(dir, n.Name+".log"), out, 0o644)
	}
}
