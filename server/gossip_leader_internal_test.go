package server

import (
	"github.com/netmgr/netmgr/internal/testwait"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
)

// gossipedLeaders returns, as server s's gossip sees the pool, the
// servers whose metadata says they lead.
func gossipedLeaders(s *Server) []string {
	var out []string
	for name, meta := range s.gossip.servers() {
		if meta.Leader {
			out = append(out, name)
		}
	}
	return out
}

// raftLeader returns the server that leads, nil if none does.
func raftLeader(servers []*Server) *Server {
	for _, s := range servers {
		if s.raft.State() == raft.Leader {
			return s
		}
	}
	return nil
}

// The leader says so in its gossip metadata (client.NodeMeta.Leader), so
// that a stub joining the pool renews with it first, and stops saying so
// once it loses leadership: after a leadership transfer every server's
// view names the new leader alone.
func TestGossipNamesTheLeader(t *testing.T) {
	p := newKeyPool(t, 3, 0, [][]byte{pki.NewGossipKey()})
	namesOnly := func(name string) func() bool {
		return func() bool {
			for _, s := range p.servers {
				if got := gossipedLeaders(s); len(got) != 1 || got[0] != name {
					return false
				}
			}
			return true
		}
	}
	var first *Server
	testwait.For(t, 30*time.Second, "a leader", func() bool { first = raftLeader(p.servers); return first != nil })
	testwait.For(t, 20*time.Second, "every server's gossip to name the leader alone", namesOnly(first.cfg.Name))

	if err := first.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	var second *Server
	testwait.For(t, 30*time.Second, "a new leader", func() bool {
		second = raftLeader(p.servers)
		return second != nil && second != first
	})
	testwait.For(t, 20*time.Second, "every server's gossip to name the new leader alone", namesOnly(second.cfg.Name))
}
