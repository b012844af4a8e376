package server

import (
	"context"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/lease"
	"github.com/netmgr/netmgr/server/membership"
	"github.com/netmgr/netmgr/server/raftnode"
	"github.com/netmgr/netmgr/server/rejoin"
)

// newMembership is a leader term's membership duty (server/membership),
// with what it needs of the server besides its handle: the gossip pool,
// the term's lease table and the facts renewals carried, Raft, and the
// certificate admission check when Raft runs over TLS.
func (s *Server) newMembership(leases *lease.Table, facts *joinFacts) *membership.Watcher {
	cfg := membership.Config{
		Pool: func() map[string]membership.Member {
			snap := s.gossip.snapshot()
			out := make(map[string]membership.Member, len(snap))
			for name, m := range snap {
				out[name] = membership.Member{Meta: m.Meta, Alive: m.Alive, Left: m.Left}
			}
			return out
		},
		PoolVersion:  s.gossip.poolVersion,
		Leases:       leases,
		StubClient:   s.stubClient,
		MachineFacts: factsFromWire,
		Rejoin: rejoin.Config{
			StubClient: s.stubClient,
			Join:       func(addrs []string) (int, error) { return s.gossip.ml.Join(addrs) },
			Members:    func() int { return s.gossip.ml.NumMembers() },
		},
		Raft:      s.raft,
		StubJoins: s.metrics.stubJoins,
	}
	if facts != nil {
		cfg.RenewalFacts = func(ctx context.Context, machine, addr string) (client.Facts, bool) {
			return facts.wait(ctx, machine, addr, joinFactsWait)
		}
	}
	if s.node.OverTLS() {
		cfg.Admit = &membership.Admit{
			Record: s.admission,
			Verify: func(ctx context.Context, name, addr string) error {
				return raftnode.VerifyServer(ctx, s.cfg.TLS, name, addr)
			},
			Refuse: s.refuseServer,
		}
	}
	return membership.New(dutyHandle{s}, cfg)
}
