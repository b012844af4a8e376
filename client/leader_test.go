package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// countingServer answers /v1/machines after delay (or never, when hang),
// naming leader as the leader when it is set, and counts the requests.
type countingServer struct {
	*httptest.Server
	tries atomic.Int32
}

func newCountingServer(t *testing.T, name string, delay time.Duration, hang bool, leader func() string) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.tries.Add(1)
		if hang {
			<-r.Context().Done()
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		if l := leader(); l != "" {
			w.Header().Set(client.LeaderHeader, l)
		}
		jsonHandler(t, 200, []client.Machine{{Name: name}})(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// host is a test server's host:port, as LeaderHeader names it.
func (s *countingServer) host() string { return strings.TrimPrefix(s.URL, "http://") }

// A round that starts on the known leader waits the leader patience, not
// the hedge delay, before it asks a follower: a leader slower than the
// hedge delay answers alone, so a stub makes no connection to the
// followers while the leader is merely slow.
func TestHedgeWaitsForTheKnownLeader(t *testing.T) {
	var leader *countingServer
	leaderName := func() string { return leader.host() }
	leader = newCountingServer(t, "from-leader", 200*time.Millisecond, false, leaderName)
	follower := newCountingServer(t, "from-follower", 0, false, leaderName)

	c := newClient(t, []string{follower.URL, leader.URL}, client.WithRetryFor(0),
		client.WithHedge(50*time.Millisecond), client.WithLeaderPatience(time.Second))
	// Unknown leader: the first round starts on the follower, whose answer
	// names the leader.
	if _, err := c.Machines(context.Background()); err != nil {
		t.Fatalf("first request: %v", err)
	}
	follower.tries.Store(0)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ms, err := c.Machines(ctx)
		cancel()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if len(ms) != 1 || ms[0].Name != "from-leader" {
			t.Fatalf("request %d: machines = %+v, want the leader's answer", i, ms)
		}
	}
	if n := follower.tries.Load(); n != 0 {
		t.Errorf("the follower was asked %d times while the leader, slower than the hedge delay but within the patience, answered", n)
	}

	// Without patience, the same slow leader gets hedged at once.
	impatient := newClient(t, []string{follower.URL, leader.URL}, client.WithRetryFor(0), client.WithHedge(50*time.Millisecond))
	impatient.SetLeader(leader.URL)
	if _, err := impatient.Machines(context.Background()); err != nil {
		t.Fatalf("impatient request: %v", err)
	}
	if follower.tries.Load() == 0 {
		t.Errorf("without leader patience the follower was not asked: the test shows nothing")
	}
}

// A known leader that hangs (cut off by a partition) costs the patience
// and no more: the round goes on to the other servers within its budget.
func TestLeaderPatienceEndsForAHangingLeader(t *testing.T) {
	leader := newCountingServer(t, "from-leader", 0, true, func() string { return "" })
	follower := newCountingServer(t, "from-follower", 0, false, func() string { return "" })
	c := newClient(t, []string{follower.URL, leader.URL}, client.WithRetryFor(0),
		client.WithHedge(50*time.Millisecond), client.WithLeaderPatience(200*time.Millisecond))
	c.SetLeader(leader.host())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	ms, err := c.Machines(ctx)
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	if len(ms) != 1 || ms[0].Name != "from-follower" {
		t.Fatalf("machines = %+v, want the follower's answer", ms)
	}
	if leader.tries.Load() != 1 {
		t.Errorf("the hinted leader was asked %d times, want 1 (first)", leader.tries.Load())
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("the follower answered after %v, before the leader patience ran out", d)
	}
}

// SetAddrs keeps the preferred server when it is still listed: a stub
// learns the servers one by one from gossip, and must not go back to the
// first (a follower) each time.
func TestSetAddrsKeepsTheLeader(t *testing.T) {
	var leader *countingServer
	leaderName := func() string { return leader.host() }
	leader = newCountingServer(t, "from-leader", 0, false, leaderName)
	follower := newCountingServer(t, "from-follower", 0, false, leaderName)
	c := newClient(t, []string{follower.URL, leader.URL})
	if _, err := c.Machines(context.Background()); err != nil {
		t.Fatalf("first request: %v", err)
	}
	follower.tries.Store(0)
	if err := c.SetAddrs([]string{follower.URL, deadAddr(t), leader.URL}); err != nil {
		t.Fatalf("set addrs: %v", err)
	}
	if _, err := c.Machines(context.Background()); err != nil {
		t.Fatalf("request after SetAddrs: %v", err)
	}
	if n := follower.tries.Load(); n != 0 {
		t.Errorf("after a new server was added the follower was asked %d times, want the leader first", n)
	}

	// A list without the preferred server starts at the first again.
	if err := c.SetAddrs([]string{follower.URL}); err != nil {
		t.Fatalf("set addrs: %v", err)
	}
	if _, err := c.Machines(context.Background()); err != nil {
		t.Fatalf("request after the leader left the list: %v", err)
	}
	if n := follower.tries.Load(); n != 1 {
		t.Errorf("the follower was asked %d times, want 1", n)
	}
}

// SetLeader ignores an address that is not one of the servers.
func TestSetLeaderIgnoresAStranger(t *testing.T) {
	s := newCountingServer(t, "only", 0, false, func() string { return "" })
	c := newClient(t, []string{s.URL})
	c.SetLeader(deadAddr(t))
	if _, err := c.Machines(context.Background()); err != nil {
		t.Fatalf("machines after a stranger was hinted: %v", err)
	}
}

// A request's own patience (WithPatience) stands in for the client's: a
// stub renewing every 3 s in a large pool waits longer for a leader that
// stalls before it asks the followers, the client unchanged.
func TestRequestPatienceStandsInForTheClients(t *testing.T) {
	var leader *countingServer
	leaderName := func() string { return leader.host() }
	leader = newCountingServer(t, "from-leader", 200*time.Millisecond, false, leaderName)
	follower := newCountingServer(t, "from-follower", 0, false, leaderName)
	c := newClient(t, []string{follower.URL, leader.URL}, client.WithRetryFor(0),
		client.WithHedge(50*time.Millisecond), client.WithLeaderPatience(50*time.Millisecond))
	c.SetLeader(leader.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ms, err := c.Machines(client.WithPatience(ctx, time.Second))
	if err != nil {
		t.Fatalf("patient request: %v", err)
	}
	if len(ms) != 1 || ms[0].Name != "from-leader" || follower.tries.Load() != 0 {
		t.Fatalf("patient request: machines = %+v, follower asked %d times; want the leader's answer alone", ms, follower.tries.Load())
	}
	if _, err := c.Machines(ctx); err != nil {
		t.Fatalf("request: %v", err)
	}
	if follower.tries.Load() == 0 {
		t.Errorf("with the client's 50 ms patience the follower was not asked: the test shows nothing")
	}
}
