package server

import (
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/planner"
)

// pool returns the gossip pool as this server sees it, with Suspect set
// on the stubs the leader has not heard a renewal from for two renewal
// intervals, and the load a stub reported with its last renewal in place
// of the one it gossiped. On a follower no stub is suspect: it holds no
// leases.
//
// A suspect machine gets no new work (lease.SuspectAfter: 1 s in a pool
// of up to 1,666 machines, 6 s at 10,000); its running work is left
// alone, and only the lease's expiry moves it elsewhere. memberlist keeps
// its suspicion to itself (a Node's State in Members() never becomes
// StateSuspect: hashicorp/memberlist#266), and the renewals are a direct,
// per-machine heartbeat to the one server that places work.
func (s *Server) pool(now time.Time) map[string]member {
	pool := s.gossip.snapshot()
	st := s.leader.Load()
	if st == nil {
		return pool
	}
	for name, m := range pool {
		if m.Meta.Role != client.RoleStub {
			continue
		}
		if l, ok := st.leases.ReportedLoad(name); ok {
			m.Meta.Load = l
		}
		m.Suspect = st.suspects(name, now)
		pool[name] = m
	}
	return pool
}

// stubUp reports whether machine's stub is up as liveness says, asking
// gossip and the leases of that machine alone.
func (s *Server) stubUp(machine string, now time.Time) bool {
	m, ok := s.gossip.member(machine)
	if !ok || !m.Alive || m.Meta.Role != client.RoleStub {
		return false
	}
	st := s.leader.Load()
	return st == nil || !st.suspects(machine, now)
}

// liveness is the pool as the planner takes it, every member's
// livenessOf. The leader's scheduler keeps it between passes instead
// (liveKeeper); this is for a follower's answers and a full look.
func (s *Server) liveness(now time.Time) map[string]planner.Liveness {
	st := s.leader.Load()
	members := s.gossip.snapshot()
	live := make(map[string]planner.Liveness, len(members))
	for name, g := range members {
		live[name] = livenessOf(name, g, st, now)
	}
	return live
}

// livenessOf is one member's liveness as the planner takes it, g its
// gossip member and st the leader's state (nil on a follower): a
// machine's stub is up while gossip holds it alive as a stub and the
// leader does not suspect it; its load is the one it reported with its
// last renewal (else the one it gossiped) less the share its own jobs
// caused, when its stub reports that (the matcher adds the load its jobs
// impose, so it would count them twice); and how long its owner has left
// it idle, when its stub watches for that.
func livenessOf(name string, g member, st *leaderState, now time.Time) planner.Liveness {
	stub := g.Meta.Role == client.RoleStub
	l := planner.Liveness{Load: g.Meta.Load}
	suspect := false
	if st != nil && stub {
		if reported, ok := st.leases.ReportedLoad(name); ok {
			l.Load = reported
		}
		suspect = st.suspects(name, now)
	}
	l.Up = g.Alive && !suspect && stub
	if st != nil {
		if own, ok := st.leases.OwnLoad(name); ok {
			l.Load = max(l.Load-own, 0)
		}
		if since, ok := st.leases.IdleSince(name); ok {
			l.IdleMinutes, l.HasIdle = max(now.Sub(since).Minutes(), 0), true
		}
	}
	return l
}
