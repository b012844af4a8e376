package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/lease"
)

// BenchmarkLiveness10k is what the leader's scheduler pays before every
// pass for the planner's liveness of 10,000 machines, each a stub alive
// in gossip that renewed its lease with a load (issue 36 point 4: the
// pass must cost in proportion to what changed).
func BenchmarkLiveness10k(b *testing.B) {
	now := time.Now()
	members := make(map[string]*member, 10_000)
	leases := lease.NewTable(now.Add(-time.Minute), nil)
	for i := range 10_000 {
		name := fmt.Sprintf("m%05d", i)
		members[name] = &member{Name: name, Alive: true, Meta: client.NodeMeta{Role: client.RoleStub, Load: 0.5}}
		load := float64(i%8) / 4
		leases.Renew(name, now, &load, nil, 0, 0, 0)
	}
	s := &Server{gossip: &gossip{members: members}}
	s.leader.Store(&leaderState{leases: leases})
	b.ResetTimer()
	for range b.N {
		if live := s.liveness(now); len(live) != 10_000 {
			b.Fatalf("liveness of %d machines, want 10,000", len(live))
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/pass")
}

// BenchmarkLiveKeeper10k is what the leader pays for liveness before a
// pass when it keeps it between passes (liveKeeper): 10,000 stubs, of
// which 20 renewed with a new load since the last pass.
func BenchmarkLiveKeeper10k(b *testing.B) {
	now := time.Now()
	members := make(map[string]*member, 10_000)
	leases := lease.NewTable(now.Add(-time.Minute), nil)
	st := &leaderState{leases: leases}
	s := &Server{gossip: &gossip{members: members}}
	k := newLiveKeeper(s, st)
	s.leader.Store(st)
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("m%05d", i)
		members[names[i]] = &member{Name: names[i], Alive: true, Meta: client.NodeMeta{Role: client.RoleStub, Load: 0.5}}
		load := float64(i%8) / 4
		leases.Renew(names[i], now, &load, nil, 0, 0, 0)
	}
	k.refresh(now)
	k.take()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range 20 {
			load := float64(i%7) / 4
			leases.Renew(names[(i*20+j)%len(names)], now, &load, nil, 0, 0, 0)
		}
		b.StartTimer()
		k.refresh(now)
		if live, _, _ := k.take(); len(live) != 10_000 {
			b.Fatalf("liveness of %d machines, want 10,000", len(live))
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/pass")
}
