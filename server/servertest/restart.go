package servertest

import (
	"testing"

	"github.com/netmgr/netmgr/server"
)

// NewDurableClusterConfig is NewDurableCluster with edit called on each
// server's configuration (its index and the configuration) before it
// starts.
func NewDurableClusterConfig(t testing.TB, n int, edit func(i int, cfg *server.Config)) *Cluster {
	return newClusterEdit(t, n, true, true, edit)
}

// StopServer shuts server i down, as an operator stopping it would.
func (c *Cluster) StopServer(i int) {
	c.t.Helper()
	if err := c.Servers[i].Shutdown(); err != nil {
		c.t.Fatalf("stop server %d: %v", i, err)
	}
}

// RestartServer starts server i again, after StopServer, on its data dir
// and Raft address, joining the gossip pool through the other servers. A
// durable cluster's only (NewDurableCluster): on the in-memory stores a
// server would come back empty.
func (c *Cluster) RestartServer(i int) *server.Server {
	c.t.Helper()
	if c.trans != nil {
		c.t.Fatalf("restart server %d: only a durable cluster's servers restart", i)
	}
	cfg := c.cfgs[i]
	cfg.RaftAddr = c.Servers[i].RaftAddr()
	cfg.Join = nil
	for j, s := range c.Servers {
		if j != i {
			cfg.Join = append(cfg.Join, s.GossipAddr())
		}
	}
	s, err := server.New(cfg)
	if err != nil {
		c.t.Fatalf("restart server %d: %v", i, err)
	}
	c.Servers[i], c.cfgs[i] = s, cfg
	c.t.Cleanup(func() { _ = s.Shutdown() })
	return s
}
