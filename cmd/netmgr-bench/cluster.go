package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// startCluster starts a process cluster of servers and stubs: secure, as
// netmgr runs by default (a throw-away CA, a certificate for every
// process, TLS on every link), or with --insecure under -insecure.
func startCluster(cfg config, bin, dir string, servers, stubs int) (*servertest.ProcCluster, error) {
	if cfg.insecure {
		return servertest.StartInsecureProcCluster(bin, dir, servers, stubs)
	}
	return servertest.StartProcCluster(bin, dir, servers, stubs)
}

// startClusterArgs is startCluster with serverArgs added to every
// server's command line.
func startClusterArgs(cfg config, bin, dir string, servers, stubs int, serverArgs []string) (*servertest.ProcCluster, error) {
	if cfg.insecure {
		return servertest.StartInsecureProcClusterArgs(bin, dir, servers, stubs, serverArgs)
	}
	return servertest.StartProcClusterArgs(bin, dir, servers, stubs, serverArgs)
}

// userClient returns a client of c's servers acting as the user running
// the benchmark, so that its jobs run as that user: in a secure cluster
// over TLS as a pool machine's stub certificate vouching for the user
// (ProcCluster.Client; what a stub does for the callers of its socket,
// without the socket's hop, so that both modes talk to the servers
// directly), in an insecure one by the header. opts come after.
func userClient(c *servertest.ProcCluster, opts ...client.Option) (*client.Client, error) {
	me, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("bench client: %w", err)
	}
	cl, err := c.Client(append([]client.Option{client.WithUser(me.Username)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bench client: %w", err)
	}
	return cl, nil
}

// simTLSArgs returns the security flags of a `netmgr sim` joining c:
// --insecure for an insecure cluster, else --ca-dir naming the cluster's
// CA directory, from which sim issues each machine's certificate, and
// the cluster's gossip keyring.
func simTLSArgs(c *servertest.ProcCluster) []string {
	if !c.Secure() {
		return []string{"--insecure"}
	}
	return []string{"--ca-dir", filepath.Dir(c.CAFile()), "--gossip-keyring", c.GossipKeyring()}
}

// clusterSpec is the process cluster a suite runs on: what withCluster
// and readyCluster start and wait for.
type clusterSpec struct {
	// suite names the suite in the progress line and the errors.
	suite string
	// servers and stubs are the numbers of processes of each kind.
	servers, stubs int
	// serverArgs are added to every server's command line.
	serverArgs []string
	// settle bounds the wait for a leader and for the stubs' machines;
	// 60 s when zero.
	settle time.Duration
	// database, when its Text is not empty, is loaded before the suite
	// runs.
	database client.DatabaseText
}

// readyCluster starts the cluster spec describes under dir/cluster,
// waits for a leader and for spec.stubs machines, and loads
// spec.database, returning the cluster, which the caller stops, and a
// client acting as the user running the bench (jobs run as their owner
// when the stubs run as root, so the owner must be a real user: ours). On
// failure it prints the processes' logs and stops the cluster itself.
func readyCluster(ctx context.Context, cfg config, bin, dir string, spec clusterSpec) (*servertest.ProcCluster, *client.Client, error) {
	settle := spec.settle
	if settle == 0 {
		settle = 60 * time.Second
	}
	args := ""
	if len(spec.serverArgs) > 0 {
		args = " " + strings.Join(spec.serverArgs, " ")
	}
	fmt.Fprintf(os.Stderr, "%s: starting %d servers%s and %d stubs ...\n", spec.suite, spec.servers, args, spec.stubs)
	c, err := startClusterArgs(cfg, bin, filepath.Join(dir, "cluster"), spec.servers, spec.stubs, spec.serverArgs)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*servertest.ProcCluster, *client.Client, error) {
		fmt.Fprintf(os.Stderr, "process logs:\n%s", c.Logs(4000))
		c.Stop()
		return nil, nil, err
	}
	if err := c.WaitLeader(settle); err != nil {
		return fail(err)
	}
	if err := c.WaitMachines(spec.stubs, settle); err != nil {
		return fail(err)
	}
	cl, err := userClient(c)
	if err != nil {
		return fail(err)
	}
	if spec.database.Text != "" {
		dctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err = cl.LoadDatabase(dctx, spec.database)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("%s: load the database: %w", spec.suite, err))
		}
	}
	if cfg.sitePolicy != "" {
		src, err := os.ReadFile(cfg.sitePolicy)
		if err != nil {
			return fail(fmt.Errorf("%s: read the site policy: %w", spec.suite, err))
		}
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err = cl.LoadPolicy(pctx, client.PolicyRequest{Source: string(src)})
		cancel()
		if err != nil {
			return fail(fmt.Errorf("%s: load the site policy: %w", spec.suite, err))
		}
	}
	return c, cl, nil
}

// withCluster runs run on the cluster spec describes, started and made
// ready by readyCluster, and stops the cluster when run returns. When run
// fails (and ctx has not ended), it prints the processes' logs before
// returning run's error. It is the one way a suite that needs a cluster
// for its whole run gets one; a suite that hands its cluster on (startcpu)
// calls readyCluster.
func withCluster[T any](ctx context.Context, cfg config, bin, dir string, spec clusterSpec, run func(c *servertest.ProcCluster, cl *client.Client) (T, error)) (T, error) {
	c, cl, err := readyCluster(ctx, cfg, bin, dir, spec)
	if err != nil {
		var zero T
		return zero, err
	}
	defer c.Stop()
	out, err := run(c, cl)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "process logs:\n%s", c.Logs(4000))
	}
	return out, err
}

// benchDB is the database the suites that submit jobs load: benchDatabase
// as bench.db.
var benchDB = client.DatabaseText{Filename: "bench.db", Text: benchDatabase}
