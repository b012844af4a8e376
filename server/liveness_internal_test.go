package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/lease"
	"github.com/netmgr/netmgr/server/planner"
)

// TestLiveKeeper drives a leader's view of a pool through seeded random
// renewals (with and without a load, own load and idle time), stubs that
// fall silent and come back, gossip joins, deaths and metadata changes,
// and a clock that moves by up to 700 ms a step, and checks after every
// step that the kept liveness equals the one built afresh
// (Server.liveness), and that every member whose liveness moved since
// the last take is among the names the take hands the planner.
func TestLiveKeeper(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 36))
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		s := &Server{gossip: &gossip{members: map[string]*member{}, events: make(chan struct{}, 1)}}
		names := make([]string, 12)
		for i := range names {
			names[i] = fmt.Sprintf("m%02d", i)
		}
		gossipAs := func(name string, alive bool, role string, load float64) {
			meta, err := json.Marshal(client.NodeMeta{Role: role, Load: load})
			if err != nil {
				t.Fatal(err)
			}
			s.gossip.update(&memberlist.Node{Name: name, Meta: meta}, alive)
		}
		for _, n := range names[:8] {
			gossipAs(n, true, client.RoleStub, 0.5)
		}
		gossipAs("s0", true, client.RoleServer, 0)
		st := &leaderState{leases: lease.NewTable(now, nil)}
		k := newLiveKeeper(s, st)
		s.leader.Store(st)
		silent := map[string]bool{}
		taken := map[string]planner.Liveness{}
		for step := range 400 {
			now = now.Add(time.Duration(rng.IntN(700)) * time.Millisecond)
			name := names[rng.IntN(len(names))]
			switch x := rng.IntN(100); {
			case x < 55:
				for _, n := range names {
					if silent[n] || rng.IntN(3) == 0 {
						continue
					}
					var load *float64
					if rng.IntN(2) == 0 {
						l := float64(rng.IntN(4)) / 2
						load = &l
					}
					st.leases.Renew(n, now, load, nil, 0, 0, 0)
					if rng.IntN(4) == 0 {
						own := float64(rng.IntN(3)) / 4
						st.leases.SetOwnLoad(n, &own)
					}
					if rng.IntN(10) == 0 {
						idle := now.Add(-time.Duration(rng.IntN(600)) * time.Second)
						st.leases.SetIdleSince(n, &idle)
					} else if rng.IntN(10) == 0 {
						st.leases.SetIdleSince(n, nil)
					}
				}
			case x < 65:
				silent[name] = !silent[name]
			case x < 75:
				gossipAs(name, rng.IntN(4) > 0, client.RoleStub, float64(rng.IntN(4)))
			case x < 80:
				st.leases.Touch(name, now)
			case x < 85:
				st.leases.SetOwnLoad(name, nil)
			}
			k.refresh(now)
			want := s.liveness(now)
			if !maps.Equal(k.live, want) {
				t.Fatalf("seed %d step %d: kept liveness\n%v\nbuilt afresh\n%v", seed, step, k.live, want)
			}
			if rng.IntN(3) == 0 {
				continue // a turn without a pass: the changes wait for the next
			}
			live, changed, all := k.take()
			for name, l := range live {
				if old, ok := taken[name]; (!ok || old != l) && !all && !slices.Contains(changed, name) {
					t.Fatalf("seed %d step %d: %s's liveness moved from %+v to %+v, and the take did not name it (%v)", seed, step, name, old, l, changed)
				}
			}
			taken = maps.Clone(live)
		}
	}
}
