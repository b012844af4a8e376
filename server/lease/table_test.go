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

// TestLeaseTableCountsTheGrantedTiming checks the scaled timing's three
// uses of the table: a proof lasts the lease the echoed token's answer
// granted, a machine expires after the lease this leadership granted
// it, and one it has not heard from yet after the lease of the pool it
// knows, which no earlier leader exceeded.
func TestLeaseTableCountsTheGrantedTiming(t *testing.T) {
	since := time.Now()
	tab := NewTable(since, nil)
	at := func(d time.Duration) time.Time { return since.Add(d) }
	const big = 10_000
	long := TimingFor(big).Duration
	if long <= Duration {
		t.Fatalf("TimingFor(%d) = %v, no longer than a small pool's", big, long)
	}

	// Not heard from: the pool's lease, from the leadership's start.
	if tab.Expired("quiet", at(long+Margin), big) || !tab.Expired("quiet", at(long+Margin+time.Millisecond), big) {
		t.Errorf("a machine not heard from must expire %v after the leadership began", long+Margin)
	}
	if tab.Lease("quiet", 10) != Duration {
		t.Errorf("a small pool's lease = %v, want %v", tab.Lease("quiet", 10), Duration)
	}

	t1 := tab.Renew("m", at(100*time.Millisecond), nil, nil, 0, big, time.Hour)
	if t1.LeaseMS != long.Milliseconds() {
		t.Fatalf("token's lease = %d ms, want %v", t1.LeaseMS, long)
	}
	t2 := tab.Renew("m", at(3*time.Second), nil, t1, 10*time.Millisecond, big, time.Hour)
	tab.Renew("m", at(6*time.Second), nil, t2, 10*time.Millisecond, big, time.Hour)
	until := since.Add(time.Duration(t2.Basis) + long)
	if !tab.Held("m", at(6*time.Second), until) || tab.Held("m", at(6*time.Second), until.Add(time.Millisecond)) {
		t.Errorf("the proof must last the granted %v from t2's basis", long)
	}
	// Granted the long lease, it expires after it whatever pool the
	// caller counts.
	if tab.Expired("m", at(6*time.Second+long+Margin), 1) || !tab.Expired("m", at(6*time.Second+long+Margin+time.Millisecond), 1) {
		t.Errorf("a machine granted %v must expire %v after its last renewal", long, long+Margin)
	}
	if got := tab.SuspectAfter(); got != SuspectAfter(big) {
		t.Errorf("suspicion threshold after renewals counting %d = %v, want %v", big, got, SuspectAfter(big))
	}
}

// TestLongerSuspicionLooksAtEveryMachine checks that a pool grown into a
// longer renewal interval makes the next Changes name every machine:
// those suspected under the shorter threshold may no longer be.
func TestLongerSuspicionLooksAtEveryMachine(t *testing.T) {
	since := time.Now()
	tab := NewTable(since, nil)
	tab.TrackChanges()
	if _, all := tab.Changes(since); !all {
		t.Fatalf("first look must be at every machine")
	}
	tab.Renew("m", since.Add(100*time.Millisecond), nil, nil, 0, 10, time.Hour)
	if _, all := tab.Changes(since.Add(200 * time.Millisecond)); all {
		t.Fatalf("a renewal in the same pool asked for every machine")
	}
	tab.Renew("m", since.Add(300*time.Millisecond), nil, nil, 0, 5000, time.Hour)
	if _, all := tab.Changes(since.Add(400 * time.Millisecond)); !all {
		t.Errorf("a longer threshold (%v) did not ask for every machine", SuspectAfter(5000))
	}
}
