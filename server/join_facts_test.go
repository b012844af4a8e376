package server_test

import (
	"runtime"
	"testing"
)

// TestStubJoinsWithTheFactsOfItsRenewal checks that a stub that joins a
// secure group is joined with the facts its first lease renewal carried,
// and that no server fetched them over a connection of its own (a TLS
// handshake per joining stub, which a whole pool starting at once pays
// for in CPU).
func TestStubJoinsWithTheFactsOfItsRenewal(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha", "beta")
	if !c.Secure() {
		t.Fatalf("the test cluster runs without TLS; the test is about the secure join")
	}
	var renewal, fetched float64
	for _, s := range c.Servers {
		m := scrape(t, c, s.HTTPAddr())
		renewal += m[`netmgr_server_stub_joins_total{facts="renewal"}`]
		fetched += m[`netmgr_server_stub_joins_total{facts="fetched"}`]
	}
	if renewal < 2 || fetched != 0 {
		t.Errorf("stub joins by where the facts came from: renewal %v, fetched %v; want 2 (or more, after a change of leader) and 0", renewal, fetched)
	}
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	if len(ms) != 2 {
		t.Fatalf("got %d machines, want 2: %+v", len(ms), ms)
	}
	for _, m := range ms {
		if m.CPUs != runtime.NumCPU() || m.Addr == "" {
			t.Errorf("machine %s joined with cpus %d and address %q; want %d and the stub's API address", m.Name, m.CPUs, m.Addr, runtime.NumCPU())
		}
	}
}
