package stub

import (
	"context"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// renewOnce sends one lease renewal through l's lease client.
func renewOnce(t *testing.T, l *serverList) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), renewTimeout)
	defer cancel()
	_, err := l.leaseClient().RenewLease(ctx, client.LeaseRequest{Machine: "m1"})
	return err
}

// leaseCount returns how many renewals f received.
func (f *fakeServer) leaseCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.leases)
}

// The renewals go to the server whose gossip metadata says it leads, and
// to it alone; they follow a new leader when gossip names one, and fall
// back to the other servers when the gossiped leader is gone.
func TestRenewalsGoToTheGossipedLeader(t *testing.T) {
	a, b := newFakeServer(t, 0), newFakeServer(t, 0)
	a.grantLeases, b.grantLeases = true, true
	l, err := newServerList(nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.setGossip("a", a.addr(), false)
	l.setGossip("b", b.addr(), false)

	for _, step := range []struct {
		leader    string
		to, other *fakeServer
	}{{"b", b, a}, {"a", a, b}} {
		l.setGossip("a", a.addr(), step.leader == "a")
		l.setGossip("b", b.addr(), step.leader == "b")
		before := step.other.leaseCount()
		for range 3 {
			if err := renewOnce(t, l); err != nil {
				t.Fatalf("renew with %s leading: %v", step.leader, err)
			}
		}
		if got := step.to.leaseCount(); got < 3 {
			t.Errorf("%s leads: it got %d renewals, want 3", step.leader, got)
		}
		if got := step.other.leaseCount() - before; got != 0 {
			t.Errorf("%s leads: the follower got %d renewals, want none", step.leader, got)
		}
	}

	// Two servers claiming to lead (an old leader's metadata not yet
	// updated) change nothing: the renewals stay where they went.
	l.setGossip("b", b.addr(), true)
	before := b.leaseCount()
	if err := renewOnce(t, l); err != nil {
		t.Fatalf("renew with two claimed leaders: %v", err)
	}
	if b.leaseCount() != before {
		t.Errorf("a second claimed leader drew a renewal from the one that answered")
	}

	// The gossiped leader dies: the renewal goes to the other server.
	a.srv.Close()
	before = b.leaseCount()
	start := time.Now()
	if err := renewOnce(t, l); err != nil {
		t.Fatalf("renew after the leader died: %v", err)
	}
	if b.leaseCount() != before+1 {
		t.Errorf("after the leader died the other server got %d renewals, want 1", b.leaseCount()-before)
	}
	t.Logf("renewal with the leader dead took %v", time.Since(start))
}
