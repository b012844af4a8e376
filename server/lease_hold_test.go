package server_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// A server that knows of no leader holds a plain renewal for one (0.8 s)
// before it refuses it, rather than answering at once and having every
// stub of a pool ask again; a renewal held when a leader becomes known
// is granted.
func TestLeaseRenewalHeldForALeader(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	li := c.WaitLeader()
	f := (li + 1) % len(c.Servers)
	lc, err := client.New(c.Addrs(f), client.WithTLS(c.Material(pki.Identity{Role: pki.RoleStub, Name: "alpha"})), client.WithRetryFor(0))
	if err != nil {
		t.Fatal(err)
	}
	renew := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := lc.RenewLease(ctx, client.LeaseRequest{Machine: "alpha"})
		if err == nil && resp.LeaseMS <= 0 {
			err = errors.New("no lease granted")
		}
		return time.Since(start), err
	}
	if took, err := renew(); err != nil {
		t.Fatalf("a renewal through a follower: %v", err)
	} else if took > 700*time.Millisecond {
		t.Errorf("a renewal through a follower that knows its leader took %v: held for nothing", took)
	}

	held := func() float64 {
		return scrape(t, c, c.Servers[f].HTTPAddr())["netmgr_server_lease_renewals_held"]
	}
	// The highest Raft term of the servers but f: it moves when the
	// others hold an election.
	term := func() float64 {
		var hi float64
		for i := range c.Servers {
			if i != f {
				hi = max(hi, serverMetric(t, c, i, "netmgr_server_raft_term"))
			}
		}
		return hi
	}
	// An election of the other two as the group heals (on a loaded CI
	// machine, the test cluster's 50 ms Raft timeouts can lapse) can outlast the hold of
	// the server f forwards to, which then refuses the renewal as it
	// should; the cut and the heal are then done again.
	for attempt := 1; ; attempt++ {
		c.Isolate(f)
		var took time.Duration
		testwait.For(t, 20*time.Second, "the cut-off follower to refuse a renewal", func() bool {
			var err error
			took, err = renew()
			return err != nil
		})
		if took < 700*time.Millisecond {
			t.Errorf("the cut-off follower refused a renewal after %v, want it held about 0.8 s first", took)
		}
		if n := held(); n != 0 {
			t.Fatalf("%v renewals held with none in flight", n)
		}
		done := make(chan error, 1)
		go func() {
			_, err := renew()
			done <- err
		}()
		testwait.For(t, 5*time.Second, "the renewal to be held", func() bool { return held() == 1 })
		before := term()
		c.Heal()
		err := <-done
		if err != nil && term() != before && attempt < 3 {
			t.Logf("attempt %d: the others held an election as the group healed (term %v, then %v) and the held renewal was refused: %v", attempt, before, term(), err)
			c.WaitLeader()
			continue
		}
		if err != nil {
			t.Fatalf("a renewal held as the group healed: %v", err)
		}
		break
	}
	if n := held(); n != 0 {
		t.Errorf("%v renewals still held after the only one was answered", n)
	}
}

// Renewals a follower held through an election go on at a pace once it
// knows the leader (releaseHeld: at least 100 a second in bursts of 5 on
// an empty pool), not in one burst: 30 held renewals end no sooner than
// a quarter of a second after the group heals, and each is granted.
func TestHeldRenewalsReleasedAtAPace(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	li := c.WaitLeader()
	f := (li + 1) % len(c.Servers)
	const n = 30
	clients := make([]*client.Client, n)
	for i := range clients {
		name := fmt.Sprintf("paced%02d", i)
		lc, err := client.New(c.Addrs(f), client.WithTLS(c.Material(pki.Identity{Role: pki.RoleStub, Name: name})), client.WithRetryFor(0))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = lc
	}
	c.Isolate(f)
	testwait.For(t, 20*time.Second, "the cut-off follower to refuse a renewal", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := clients[0].RenewLease(ctx, client.LeaseRequest{Machine: "paced00"})
		return err != nil
	})

	ended := make(chan time.Time, n)
	errs := make(chan error, n)
	for i, lc := range clients {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for {
				resp, err := lc.RenewLease(ctx, client.LeaseRequest{Machine: fmt.Sprintf("paced%02d", i)})
				if err == nil && resp.LeaseMS <= 0 {
					err = errors.New("no lease granted")
				}
				if err == nil || ctx.Err() != nil {
					ended <- time.Now()
					errs <- err
					return
				}
				// Refused after the hold, before the heal: ask again.
			}
		}()
	}
	held := func() float64 {
		return scrape(t, c, c.Servers[f].HTTPAddr())["netmgr_server_lease_renewals_held"]
	}
	testwait.For(t, 5*time.Second, "every renewal to be held", func() bool { return held() == n })
	healed := time.Now()
	c.Heal()
	var last time.Time
	for range n {
		if at := <-ended; at.After(last) {
			last = at
		}
		if err := <-errs; err != nil {
			t.Errorf("a renewal held as the group healed: %v", err)
		}
	}
	if spread := last.Sub(healed); spread < 240*time.Millisecond {
		t.Errorf("30 held renewals all ended %v after the heal, want them let go at 100 a second (>= 0.25 s)", spread)
	}
}
