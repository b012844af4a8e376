package stub

import (
	"testing"

	"github.com/netmgr/netmgr/client"

	"github.com/netmgr/netmgr/internal/testwait"
)

// A stub sends its load with lease renewals once the server says it takes
// it, and stops gossiping load changes.
func TestLoadRidesOnRenewals(t *testing.T) {
	srv := newFakeServer(t, 0)
	srv.grantLeases = true
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})

	testwait.For(t, waitTimeout, "a renewal carrying the load", func() bool {
		_, withLoad, _ := srv.leaseCounts()
		return withLoad > 0
	})
	if !s.lease.loadByLease.Load() {
		t.Errorf("the server takes the load, but the stub still gossips it")
	}
	if _, _, refused := srv.leaseCounts(); refused != 0 {
		t.Errorf("got %d refused renewals, want none", refused)
	}
}

// A stub reports its owner verdict and its own jobs' load only to servers
// that say they take them: an older server refuses unknown fields.
func TestAsleepRidesOnRenewalsOnlyWhenTaken(t *testing.T) {
	for _, takes := range []bool{false, true} {
		srv := newFakeServer(t, 0)
		srv.grantLeases, srv.takesAsleep = true, takes
		newTestStub(t, Config{Servers: []string{srv.addr()}})
		testwait.For(t, waitTimeout, "renewals", func() bool { n, _, _ := srv.leaseCounts(); return n > 5 })
		req, _ := srv.lastLease()
		if got := req.Asleep != nil && req.OwnLoad != nil; got != takes {
			t.Errorf("server takes it %v: got Asleep %v OwnLoad %v", takes, req.Asleep, req.OwnLoad)
		}
		if takes && *req.Asleep != "" {
			t.Errorf("a stub without an owner policy says asleep %q", *req.Asleep)
		}
	}
}

// A renewal carries the load only when it moved by loadStep since the
// renewal that last carried it, when its own jobs' share did, or when a
// new leadership answered since (it holds no load yet).
func TestLoadSentWhenItMoves(t *testing.T) {
	k := &leaseKeeper{}
	if !k.loadMoved(0.5, 0) {
		t.Errorf("nothing sent yet: want the load sent")
	}
	k.token = &client.LeaseToken{Leadership: 7}
	k.loadSent, k.ownSent, k.loadTo, k.loadSentOK = 0.5, 0.1, 7, true
	for _, c := range []struct {
		name      string
		load, own float64
		want      bool
	}{
		{"unchanged", 0.5, 0.1, false},
		{"a little", 0.52, 0.11, false},
		{"load moved", 0.56, 0.1, true},
		{"load fell", 0.44, 0.1, true},
		{"own load moved", 0.5, 0.2, true},
	} {
		if got := k.loadMoved(c.load, c.own); got != c.want {
			t.Errorf("%s: loadMoved(%v, %v) = %v, want %v", c.name, c.load, c.own, got, c.want)
		}
	}
	k.token = &client.LeaseToken{Leadership: 8}
	if !k.loadMoved(0.5, 0.1) {
		t.Errorf("a new leadership answered: want the load sent")
	}
	k.token = nil
	if !k.loadMoved(0.5, 0.1) {
		t.Errorf("a server without tokens: want the load sent every renewal")
	}
}
