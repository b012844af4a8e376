package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// The lease metrics the waiting-stream tests read.
const (
	leaseStreamsOpen   = `netmgr_server_lease_streams_open`
	renewalsOnStreams  = `netmgr_server_lease_renewals_total{path="stream"}`
	renewalsByRequests = `netmgr_server_lease_renewals_total{path="request"}`
)

// stubLeaseClient is a lease client for machine name as a stub makes one
// (stub/servers.go), its warming rounds every 200 ms so that its streams
// with the followers open within the test.
func stubLeaseClient(t *testing.T, c *servertest.Cluster, name string) *client.Client {
	t.Helper()
	lc, err := client.New(c.Addrs(), client.WithTLS(c.Material(pki.Identity{Role: pki.RoleStub, Name: name})),
		client.WithRetryFor(0), client.WithHedge(150*time.Millisecond), client.WithLeaderPatience(500*time.Millisecond),
		client.WithLeaseStream(), client.WithWarmConnections(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// serverMetric reads metric name from server i of c.
func serverMetric(t *testing.T, c *servertest.Cluster, i int, name string) float64 {
	t.Helper()
	return scrape(t, c, c.Servers[i].HTTPAddr())[name]
}

// TestLeaseStreamsWaitWithTheFollowers renews as a stub's lease client
// does, with warm connections: besides its stream with the leader it
// keeps one open with each follower, and when the leader stops, the new
// leader's renewals go on the stream that waited there, no new one
// opened, after at most a plain request or two that found the leader.
func TestLeaseStreamsWaitWithTheFollowers(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	li := c.WaitLeader()
	lc := stubLeaseClient(t, c, "alpha")
	defer lc.CloseLeaseStream()
	renew := func() error {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := lc.RenewLease(rctx, client.LeaseRequest{Machine: "alpha"})
		return err
	}
	metric := func(i int, name string) float64 { return serverMetric(t, c, i, name) }
	testwait.For(t, 20*time.Second, "a lease stream open with every server", func() bool {
		if err := renew(); err != nil {
			t.Fatalf("renew: %v", err)
		}
		for i := range c.Servers {
			if metric(i, leaseStreamsOpen) != 1 {
				time.Sleep(100 * time.Millisecond)
				return false
			}
		}
		return true
	})
	if got := metric(li, renewalsOnStreams); got == 0 {
		t.Fatal("the leader granted no renewal on a stream")
	}

	c.StopServer(li)
	next := -1
	testwait.For(t, 20*time.Second, "renewals on a stream with the new leader", func() bool {
		_ = renew() // those during the election fail
		for i := range c.Servers {
			if i != li && c.Servers[i].IsLeader() && metric(i, renewalsOnStreams) > 0 {
				next = i
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	if got := metric(next, renewalsByRequests); got > 2 {
		t.Errorf("the new leader granted %v plain renewals before the stream took over, want at most 2", got)
	}
	before := metric(next, renewalsOnStreams)
	for range 3 {
		if err := renew(); err != nil {
			t.Fatalf("renew with the new leader: %v", err)
		}
	}
	if got := metric(next, renewalsOnStreams) - before; got != 3 {
		t.Errorf("the new leader granted %v of 3 renewals on a stream, want 3", got)
	}
	if got := metric(next, leaseStreamsOpen); got != 1 {
		t.Errorf("the new leader has %v lease streams open, want the 1 that waited there", got)
	}
}

// TestLeaseStreamsCarryAFailover kills the leader under a pool of lease
// clients renewing as stubs do: each one's renewals go on over the
// streams that waited with the survivors, none by a plain request and
// none on a stream opened after the kill, and every client keeps its
// stream with each survivor.
func TestLeaseStreamsCarryAFailover(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	li := c.WaitLeader()
	const n = 10
	startRenewing(t, c, n, 500*time.Millisecond) // those during the election fail
	metric := func(i int, name string) float64 { return serverMetric(t, c, i, name) }
	testwait.For(t, 20*time.Second, "every client's stream open with every server", func() bool {
		for i := range c.Servers {
			if metric(i, leaseStreamsOpen) != n {
				time.Sleep(100 * time.Millisecond)
				return false
			}
		}
		return true
	})

	c.StopServer(li)
	next := -1
	testwait.For(t, 20*time.Second, "a new leader granting renewals on streams", func() bool {
		for i := range c.Servers {
			if i != li && c.Servers[i].IsLeader() && metric(i, renewalsOnStreams) >= 2*n {
				next = i
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	if got := metric(next, renewalsByRequests); got != 0 {
		t.Errorf("the new leader granted %v plain renewals, want 0: every renewal on a stream that waited there", got)
	}
	for i := range c.Servers {
		if i == li {
			continue
		}
		if got := metric(i, leaseStreamsOpen); got != n {
			t.Errorf("server %d has %v lease streams open after the failover, want the %d that waited there", i, got, n)
		}
	}
}
