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
		Pool:         s.gossip.membershipPool,
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

// membershipPool returns a copy of the pool in membership's form, made
// in one pass under the view's lock: a copy of the view's own form and a
// second of that were half of a membership pass's time in a profile of
// the leader at 4,000 machines joining.
func (g *gossip) membershipPool() map[string]membership.Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]membership.Member, len(g.members))
	for name, m := range g.members {
		out[name] = membership.Member{Meta: m.Meta, Alive: m.Alive, Left: m.Left}
	}
	return out
}
