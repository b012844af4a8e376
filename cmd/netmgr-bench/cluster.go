package main

import (
	"fmt"
	"os/user"
	"path/filepath"

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
