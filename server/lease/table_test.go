package lease

import (
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func TestQuorumFromChecksEveryLongerPrefix(t *testing.T) {
	order := &PoolOrder{names: []string{"a", "b", "c", "d", "e"}}
	for _, tc := range []struct {
		name     string
		supports []string
		want     []bool // entries 1..5
	}{
		{"all support", []string{"a", "b", "c", "d", "e"}, []bool{true, true, true, true, true}},
		{"none", nil, []bool{false, false, false, false, false}},
		// a is silent: prefix 1 ({a}) has no support, every longer one at
		// least half.
		{"first silent", []string{"b", "c", "d", "e"}, []bool{false, true, true, true, true}},
		// Three of five silent: prefix 5 has 2 of 5, under half, so no k
		// passes: a stub knowing any prefix might find a majority.
		{"majority silent", []string{"a", "b"}, []bool{false, false, false, false, false}},
		// Exactly half of a prefix is enough for the leader (prefix 4: a
		// and d), but prefix 3 holds only a: stubs knowing 3 or fewer
		// machines might find a majority.
		{"half of four", []string{"a", "d", "e"}, []bool{false, false, false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := order.QuorumFrom(func(n string) bool { return slices.Contains(tc.supports, n) })
			if !from[6] {
				t.Errorf("entry size+1 must be true")
			}
			if got := from[1:6]; !slices.Equal(got, tc.want) {
				t.Errorf("quorumFrom = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLeaseTableProvesAHeldLeaseFromEchoedTokens(t *testing.T) {
	since := time.Now()
	tab := NewTable(since, nil)
	at := func(d time.Duration) time.Time { return since.Add(d) }

	// A token of another leadership proves nothing.
	foreign := &client.LeaseToken{Leadership: tab.id + 2, Issued: 1, Basis: 1, Pool: 9}
	t1 := tab.Renew("m", at(100*time.Millisecond), nil, foreign, 0, 3, time.Hour)
	if t1.Basis != 0 || t1.Pool != 3 || t1.GraceMS != time.Hour.Milliseconds() {
		t.Fatalf("first token = %+v, want no basis, pool 3, grace 1h", t1)
	}
	if got := tab.Grace("m"); got != MaxOutageGrace {
		t.Errorf("grace before any proof = %v, want the maximum %v", got, MaxOutageGrace)
	}
	// Echoing t1 proves the pool and grace it carried but no lease span
	// yet (t1 had no basis).
	t2 := tab.Renew("m", at(600*time.Millisecond), nil, t1, 50*time.Millisecond, 4, time.Hour)
	if want := t1.Issued + int64(50*time.Millisecond); t2.Basis != want {
		t.Errorf("second token's basis = %d, want t1's issue plus its age, %d", t2.Basis, want)
	}
	if tab.Knows("m", 1) != 3 || tab.Grace("m") != time.Hour {
		t.Errorf("after echoing t1: knows %d grace %v, want 3 and 1h", tab.Knows("m", 1), tab.Grace("m"))
	}
	if tab.Held("m", at(600*time.Millisecond), at(time.Second)) {
		t.Errorf("a token without basis proved a held lease")
	}
	// Echoing t2 proves a lease held from before the request's arrival
	// until t2's basis plus a lease.
	tab.Renew("m", at(1100*time.Millisecond), nil, t2, 0, 4, time.Hour)
	until := since.Add(time.Duration(t2.Basis) + Duration)
	if !tab.Held("m", at(1100*time.Millisecond), until) {
		t.Errorf("lease not held over [1.1s, %v]", until.Sub(since))
	}
	if tab.Held("m", at(1000*time.Millisecond), until) {
		t.Errorf("lease held from before the proving request arrived")
	}
	if tab.Held("m", at(1100*time.Millisecond), until.Add(time.Millisecond)) {
		t.Errorf("lease held past basis plus a lease")
	}
	if tab.Knows("m", 5) != 5 {
		t.Errorf("knows must never be below the machine's position")
	}
}
