package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
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

// oneStubCluster starts cfg.servers servers (serverArgs added to their
// command lines) and one stub under dir/cluster for the suite named
// suite, waits for a leader and the stub's machine, and loads
// benchDatabase, returning the cluster, which the caller stops, and a
// client acting as the user running the bench. On failure it prints the
// processes' logs and stops the cluster itself.
func oneStubCluster(ctx context.Context, cfg config, bin, dir, suite string, serverArgs []string) (*servertest.ProcCluster, *client.Client, error) {
	fmt.Fprintf(os.Stderr, "%s: starting %d servers and 1 stub %v ...\n", suite, cfg.servers, serverArgs)
	c, err := startClusterArgs(cfg, bin, filepath.Join(dir, "cluster"), cfg.servers, 1, serverArgs)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*servertest.ProcCluster, *client.Client, error) {
		fmt.Fprintf(os.Stderr, "process logs:\n%s", c.Logs(4000))
		c.Stop()
		return nil, nil, err
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return fail(err)
	}
	if err := c.WaitMachines(1, 60*time.Second); err != nil {
		return fail(err)
	}
	cl, err := userClient(c)
	if err != nil {
		return fail(err)
	}
	dctx, cancel := context.WithTimeout(ctx, opTimeout)
	_, err = cl.LoadDatabase(dctx, client.DatabaseText{Filename: "bench.db", Text: benchDatabase})
	cancel()
	if err != nil {
		return fail(fmt.Errorf("%s: load the database: %w", suite, err))
	}
	return c, cl, nil
}
