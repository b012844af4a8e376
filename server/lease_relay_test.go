package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
)

const renewalsRelayed = `netmgr_server_lease_renewals_total{path="relay"}`

// renewingPool is n machines renewing their leases as stubs do, every
// interval, until the test ends; it counts the renewals that failed
// after ok turned true and keeps the last failure.
type renewingPool struct {
	ok     atomic.Bool
	failed atomic.Int64
	last   atomic.Value // the last failure, ok or not, "machine: error"
}

// startRenewing starts a renewingPool of n lease clients of c, each
// renewing every interval.
func startRenewing(t *testing.T, c *servertest.Cluster, n int, every time.Duration) *renewingPool {
	t.Helper()
	p := &renewingPool{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		lc := stubLeaseClient(t, c, name)
		wg.Go(func() {
			defer lc.CloseLeaseStream()
			for ctx.Err() == nil {
				rctx, done := context.WithTimeout(ctx, time.Second)
				_, err := lc.RenewLease(rctx, client.LeaseRequest{Machine: name})
				done()
				if err != nil && ctx.Err() == nil {
					p.last.Store(fmt.Sprintf("%s: %v", name, err))
					if p.ok.Load() {
						p.failed.Add(1)
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(every):
				}
			}
		})
	}
	return p
}

// TestLeaseRenewalsRelayedByTheFollowers renews, as stubs do, in a pool
// past the group's --lease-relay-from: the leader names a follower in
// each answer, the stubs move their renewals to the streams they keep
// there, and the followers pass them on in batches, so that the leader's
// own streams carry none. When the leader stops, the renewals go on
// through the survivors' streams, the new leader granting its own and
// the other relaying, and no client dials it.
func TestLeaseRenewalsRelayedByTheFollowers(t *testing.T) {
	t.Parallel()
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) { cfg.LeaseRelayFrom = 1 })
	li := c.WaitLeader()
	const n = 8
	// The pool the leader counts is the machines that joined: one real
	// stub makes it 1, and renews through a follower too. It warms every
	// second, not every 4 minutes with its first round somewhere in its
	// first 30 s: under a loaded CI that round could miss a server, and
	// its next come after this test's minute.
	c.AddStubConfig("real", "", func(cfg *stub.Config) { cfg.LeaseWarmEvery = time.Second })
	metric := func(i int, name string) float64 { return serverMetric(t, c, i, name) }
	p := startRenewing(t, c, n, 200*time.Millisecond)
	testwait.Until(t, 30*time.Second, "every client's stream open with every server", func() (bool, string) {
		open := make([]float64, len(c.Servers))
		for i := range c.Servers {
			open[i] = metric(i, leaseStreamsOpen)
		}
		if slices.ContainsFunc(open, func(o float64) bool { return o != n+1 }) {
			time.Sleep(200 * time.Millisecond)
			return false, fmt.Sprintf("streams open per server %v, the leader %d", open, li)
		}
		return true, ""
	})
	testwait.For(t, 30*time.Second, "every renewal relayed by a follower", func() bool {
		stream, relayed := metric(li, renewalsOnStreams), metric(li, renewalsRelayed)
		time.Sleep(time.Second)
		return relayed > 0 && metric(li, renewalsOnStreams) == stream && metric(li, renewalsRelayed)-relayed >= 2*n
	})
	p.ok.Store(true)
	before := metric(li, renewalsRelayed)
	time.Sleep(2 * time.Second)
	if got := metric(li, renewalsRelayed) - before; got < 5*n {
		t.Errorf("the leader granted %v relayed renewals in 2 s from %d clients renewing every 0.2 s, want at least %d", got, n, 5*n)
	}
	if got := p.failed.Load(); got != 0 {
		t.Errorf("%d renewals failed while relayed, the last %v", got, p.last.Load())
	}

	c.StopServer(li)
	p.ok.Store(false)
	next := c.WaitLeader(li)
	testwait.Until(t, 20*time.Second, "every client renewing again", func() (bool, string) {
		relayed, stream := metric(next, renewalsRelayed), metric(next, renewalsOnStreams)
		time.Sleep(time.Second)
		relayed, stream = metric(next, renewalsRelayed)-relayed, metric(next, renewalsOnStreams)-stream
		// Each of n clients renews about 5 times a second.
		return relayed+stream >= 3*n, fmt.Sprintf("in 1 s the new leader %d granted %v relayed and %v on its streams; the last failure %v",
			next, relayed, stream, p.last.Load())
	})
	if got := metric(next, renewalsByRequests); got != 0 {
		t.Errorf("the new leader granted %v plain renewals, want 0: every renewal on a stream that waited with a survivor", got)
	}
	if got := metric(next, leaseStreamsOpen); got != n+1 {
		t.Errorf("the new leader has %v lease streams open, want the %d that waited there", got, n+1)
	}
}
