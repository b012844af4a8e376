package server

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/lease"
)

// The leader's pool carries the load a stub reported with its last lease
// renewal in place of the one it gossiped; a stub that reports none keeps
// its gossiped load, and silence still makes a stub suspect.
func TestPoolTakesLoadFromRenewals(t *testing.T) {
	now := time.Now()
	stubAt := func(load float64) *member {
		return &member{Alive: true, Meta: client.NodeMeta{Role: client.RoleStub, Load: load}}
	}
	s := &Server{gossip: &gossip{members: map[string]*member{
		"alpha": stubAt(0.5), "beta": stubAt(1.5), "gamma": stubAt(2.5),
		"s0": {Alive: true, Meta: client.NodeMeta{Role: client.RoleServer}},
	}}}
	leases := lease.NewTable(now.Add(-time.Minute), nil)
	s.leader.Store(&leaderState{leases: leases})
	load := 7.25
	leases.Renew("alpha", now, &load, nil, 0, 0, 0)
	leases.Renew("beta", now, nil, nil, 0, 0, 0)

	pool := s.pool(now)
	for _, tc := range []struct {
		name    string
		load    float64
		suspect bool
	}{
		{"alpha", 7.25, false}, // reported with its renewal
		{"beta", 1.5, false},   // an older stub: gossiped
		{"gamma", 2.5, true},   // no renewal this minute
	} {
		m := pool[tc.name]
		if m.Meta.Load != tc.load || m.Suspect != tc.suspect {
			t.Errorf("%s: got load %v suspect %v, want %v and %v", tc.name, m.Meta.Load, m.Suspect, tc.load, tc.suspect)
		}
	}
	if pool["s0"].Suspect {
		t.Errorf("a server is suspect; only stubs renew leases")
	}
}

// The planner scores a machine by its load less the share its own jobs
// caused, when its stub reports that share: the matcher adds the load
// those jobs impose.
func TestLivenessTakesOwnLoadOff(t *testing.T) {
	now := time.Now()
	s := &Server{gossip: &gossip{members: map[string]*member{
		"alpha": {Alive: true, Meta: client.NodeMeta{Role: client.RoleStub}},
		"beta":  {Alive: true, Meta: client.NodeMeta{Role: client.RoleStub}},
		"gamma": {Alive: true, Meta: client.NodeMeta{Role: client.RoleStub}},
	}}}
	leases := lease.NewTable(now.Add(-time.Minute), nil)
	s.leader.Store(&leaderState{leases: leases})
	for name, l := range map[string][2]float64{"alpha": {3, 2}, "beta": {1, 1.5}, "gamma": {2.5, -1}} {
		load := l[0]
		leases.Renew(name, now, &load, nil, 0, 0, 0)
		if own := l[1]; own >= 0 {
			leases.SetOwnLoad(name, &own)
		}
	}
	live := s.liveness(now)
	for name, want := range map[string]float64{"alpha": 1, "beta": 0, "gamma": 2.5} {
		if got := live[name].Load; got != want {
			t.Errorf("%s: got load %v, want %v", name, got, want)
		}
	}
	if got := s.pool(now)["alpha"].Meta.Load; got != 3 {
		t.Errorf("the pool (netstatus -m) shows alpha's load %v, want all of it, 3", got)
	}
	leases.SetOwnLoad("alpha", nil) // a stub that stopped reporting it
	if got := s.liveness(now)["alpha"].Load; got != 3 {
		t.Errorf("alpha no longer reports its own load: got %v, want 3", got)
	}
}
