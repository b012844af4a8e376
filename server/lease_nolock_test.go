package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestRenewalTakesNoFSMLock holds the leader's database under a long
// read with a write queued behind it, which makes every other reader of
// the database wait (a snapshot of a large state does the same), and
// renews a machine's lease meanwhile: the renewal is answered, with the
// machine's index and join position, while the write still waits, since
// it reads the lease book (server/lease.Book) and not the database.
//
// A round in which leadership moved (the in-memory group can elect under
// a loaded -race run) proves nothing: it is run again at the new leader.
func TestRenewalTakesNoFSMLock(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha")
	for round := 1; !renewalRound(t, c, cl); round++ {
		if round == 3 {
			t.Fatalf("leadership moved during each of %d rounds", round)
		}
		t.Logf("leadership moved during round %d; again", round)
	}
}

// renewalRound is TestRenewalTakesNoFSMLock at the current leader; false
// when leadership moved while the database was held.
func renewalRound(t *testing.T, c *servertest.Cluster, cl *client.Client) bool {
	t.Helper()
	li := c.WaitLeader()
	leader := c.Servers[li]
	// alpha's stub, speaking to the leader only.
	stub, err := client.New(c.Addrs(li), client.WithTLS(c.Material(pki.Identity{Role: pki.RoleStub, Name: "alpha"})))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	held, _ := leader.LocalJobs()
	leader.HoldFSMRead(release)
	submitted := make(chan error, 1)
	go func() {
		_, err := cl.Submit(context.Background(), client.SubmitRequest{Spec: client.JobSpec{
			Binaries: map[string]string{client.AnyKey: "/bin/true"}}})
		submitted <- err
	}()
	// The write is committed, reaches the FSM and waits for the lock;
	// from then on every new read of the database waits behind it.
	testwait.For(t, 30*time.Second, "a read of the database waiting behind the queued write", func() bool {
		return leader.FSMReadWaits(held, 200*time.Millisecond) || c.WaitLeader() != li
	})
	var resp client.LeaseResponse
	testwait.For(t, 30*time.Second, "a renewal answered while the database is held", func() bool {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := stub.RenewLease(rctx, client.LeaseRequest{Machine: "alpha"})
		if err != nil {
			t.Logf("renewal: %v", err)
			return c.WaitLeader() != li // moved: the round ends below
		}
		resp = r
		return true
	})
	if now := c.WaitLeader(); now != li {
		close(release)
		released = true
		<-submitted // whatever it says: the round proves nothing
		return false
	}
	select {
	case err := <-submitted:
		t.Fatalf("the submit returned (%v) while the database was held: the lock was never contended", err)
	default:
	}
	if resp.LeaseMS <= 0 || resp.MachineIndex == 0 || resp.Position != 1 || resp.PoolSize != 1 {
		t.Errorf("renewal answered %+v; want a lease, alpha's index, position 1 of 1", resp)
	}
	// A refused renewal is answered too: an error's answer takes no lock
	// either (it once named the index under it, and waited).
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err = stub.RenewLease(rctx, client.LeaseRequest{Machine: "beta"})
	cancel()
	var refused *client.APIError
	if !errors.As(err, &refused) || refused.Status != http.StatusForbidden {
		t.Errorf("alpha renewing beta's lease while the database was held: %v; want 403 at once", err)
	}
	close(release)
	released = true
	if err := <-submitted; err != nil {
		t.Errorf("submit after the database was released: %v", err)
	}
	return true
}
