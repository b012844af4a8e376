package server

import (
	"fmt"
	"testing"
	"time"
)

// picks counts, over machines m0..m(n-1), the servers pick names at now.
func picks(v *relayVia, n int, now time.Time) map[string]int {
	got := make(map[string]int)
	for i := range n {
		got[v.pick(fmt.Sprintf("m%d", i), now)]++
	}
	return got
}

// The servers the leader finds at its first look take their shares at
// once; one that comes later, or comes back, takes a growing part of its
// share over relayRamp, the rest staying with the others.
func TestRelayViaRampsUpAServerThatCameBack(t *testing.T) {
	const n = 3000
	t0 := time.Unix(1_000_000, 0)
	var v relayVia
	v.refresh([]string{"a", "b"}, t0)
	got := picks(&v, n, t0)
	if got["a"]+got["b"] != n || got["a"] < n/3 || got["b"] < n/3 {
		t.Fatalf("at the first look %v of %d machines, want about half each on a and b", got, n)
	}

	t1 := t0.Add(10 * time.Second)
	v.refresh([]string{"a", "b", "c"}, t1)
	for _, c := range []struct {
		after    time.Duration
		min, max int // machines on c, of the ~1,000 that hash to it
	}{
		{0, 0, 0},
		{relayRamp / 4, 150, 350},
		{relayRamp / 2, 380, 620},
		{relayRamp, 850, 1150},
		{2 * relayRamp, 850, 1150},
	} {
		got := picks(&v, n, t1.Add(c.after))
		if got["c"] < c.min || got["c"] > c.max || got["a"]+got["b"]+got["c"] != n {
			t.Errorf("%v after c came: %v, want %d-%d on c and the rest on a and b", c.after, got, c.min, c.max)
		}
	}

	// c gone, then back: it ramps up again.
	t2 := t1.Add(3 * relayRamp)
	v.refresh([]string{"a", "b"}, t2)
	v.refresh([]string{"a", "b", "c"}, t2.Add(time.Second))
	if got := picks(&v, n, t2.Add(time.Second)); got["c"] != 0 {
		t.Errorf("c back: %v, want none on it yet", got)
	}
}

// A leader that found no other server at its first look (a group
// starting) names the servers that then come at once: there are no
// others to leave the machines with.
func TestRelayViaNamesServersAtOnceWhenNoneWasThere(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var v relayVia
	v.refresh(nil, t0)
	v.refresh([]string{"a", "b"}, t0.Add(time.Second))
	if got := picks(&v, 1000, t0.Add(time.Second)); got["a"] < 300 || got["b"] < 300 {
		t.Errorf("servers of a starting group: %v, want about half each", got)
	}
	// One ramping and none other in full: it takes every machine that
	// hashes to it.
	var w relayVia
	w.refresh([]string{"a"}, t0)
	w.refresh([]string{"b"}, t0.Add(time.Second))
	if got := picks(&w, 1000, t0.Add(time.Second)); got["b"] != 1000 {
		t.Errorf("the only server, ramping: %v, want all on b", got)
	}
}
