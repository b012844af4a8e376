package server

import (
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func TestQuorumFromChecksEveryLongerPrefix(t *testing.T) {
	order := &poolOrder{names: []string{"a", "b", "c", "d", "e"}}
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
			from := order.quorumFrom(func(n string) bool { return slices.Contains(tc.supports, n) })
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
	tab := newLeaseTable(since)
	at := func(d time.Duration) time.Time { return since.Add(d) }

	// A token of another leadership proves nothing.
	foreign := &client.LeaseToken{Leadership: tab.id + 2, Issued: 1, Basis: 1, Pool: 9}
	t1 := tab.renew("m", at(100*time.Millisecond), nil, foreign, 0, 3, time.Hour)
	if t1.Basis != 0 || t1.Pool != 3 || t1.GraceMS != time.Hour.Milliseconds() {
		t.Fatalf("first token = %+v, want no basis, pool 3, grace 1h", t1)
	}
	if got := tab.grace("m"); got != MaxOutageGrace {
		t.Errorf("grace before any proof = %v, want the maximum %v", got, MaxOutageGrace)
	}
	// Echoing t1 proves the pool and grace it carried but no lease span
	// yet (t1 had no basis).
	t2 := tab.renew("m", at(600*time.Millisecond), nil, t1, 50*time.Millisecond, 4, time.Hour)
	if want := t1.Issued + int64(50*time.Millisecond); t2.Basis != want {
		t.Errorf("second token's basis = %d, want t1's issue plus its age, %d", t2.Basis, want)
	}
	if tab.knows("m", 1) != 3 || tab.grace("m") != time.Hour {
		t.Errorf("after echoing t1: knows %d grace %v, want 3 and 1h", tab.knows("m", 1), tab.grace("m"))
	}
	if tab.held("m", at(600*time.Millisecond), at(time.Second)) {
		t.Errorf("a token without basis proved a held lease")
	}
	// Echoing t2 proves a lease held from before the request's arrival
	// until t2's basis plus a lease.
	tab.renew("m", at(1100*time.Millisecond), nil, t2, 0, 4, time.Hour)
	until := since.Add(time.Duration(t2.Basis) + LeaseDuration)
	if !tab.held("m", at(1100*time.Millisecond), until) {
		t.Errorf("lease not held over [1.1s, %v]", until.Sub(since))
	}
	if tab.held("m", at(1000*time.Millisecond), until) {
		t.Errorf("lease held from before the proving request arrived")
	}
	if tab.held("m", at(1100*time.Millisecond), until.Add(time.Millisecond)) {
		t.Errorf("lease held past basis plus a lease")
	}
	if tab.knows("m", 5) != 5 {
		t.Errorf("knows must never be below the machine's position")
	}
}

// TestStatementWindowLeavesARenewal checks the outage timing against the
// stubs' renewals: whatever the phase of a machine's renewals (every
// 0.5 s, stub.defaultRenewEvery, each proving a lease up to 0.2 s shorter
// than LeaseDuration from its arrival, for the request's round trip and
// the token's age), one of them proves the lease held throughout
// statementWindow, so a leader that still renews the pool can expire a
// dead machine's lease as soon as the plain rule allows.
func TestStatementWindowLeavesARenewal(t *testing.T) {
	const (
		renewEvery = 500 * time.Millisecond
		shortfall  = 200 * time.Millisecond
	)
	base := time.Unix(1_000_000, 0)
	now := base.Add(10 * time.Second)
	from, to := statementWindow(now)
	for phase := time.Duration(0); phase < renewEvery; phase += 10 * time.Millisecond {
		found := false
		for at := base.Add(phase); at.Before(now); at = at.Add(renewEvery) {
			if !at.After(from) && !at.Add(LeaseDuration-shortfall).Before(to) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("renewals every %v at phase %v: none arrived by %v and held to %v",
				renewEvery, phase, from.Sub(now), to.Sub(now))
		}
	}
}
