package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// A hedged client asks the next server once the first has not answered
// within the hedge delay, and takes the first answer: a server that hangs
// costs one delay, not the round.
func TestHedgeSkipsAHangingServer(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	live := httptest.NewServer(jsonHandler(t, 200, []client.Machine{{Name: "m1"}}))
	defer live.Close()
	c := newClient(t, []string{hang.URL, live.URL}, client.WithHedge(100*time.Millisecond), client.WithRetryFor(0))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ms, err := c.Machines(ctx)
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	if len(ms) != 1 || ms[0].Name != "m1" {
		t.Fatalf("machines = %+v, want m1 from the live server", ms)
	}
	// The answering server is preferred from now on.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel2()
	if _, err := c.Machines(ctx2); err != nil {
		t.Errorf("second call did not go to the live server first: %v", err)
	}
}

// The point of hedging over a per-try timeout: a leader slower than the
// hedge delay still answers within the round while the other servers
// refuse (no leader there), where a try timeout would have cut it off.
func TestHedgeLetsASlowLeaderAnswer(t *testing.T) {
	const slow = 400 * time.Millisecond
	var followerTries atomic.Int32
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
		jsonHandler(t, 200, []client.Machine{{Name: "from-leader"}})(w, r)
	}))
	defer leader.Close()
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followerTries.Add(1)
		http.Error(w, `{"error":"not the leader"}`, http.StatusServiceUnavailable)
	}))
	defer follower.Close()
	addrs := []string{leader.URL, follower.URL}

	c := newClient(t, addrs, client.WithHedge(100*time.Millisecond), client.WithRetryFor(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ms, err := c.Machines(ctx)
	if err != nil {
		t.Fatalf("hedged: %v", err)
	}
	if len(ms) != 1 || ms[0].Name != "from-leader" {
		t.Fatalf("hedged: machines = %+v, want the leader's answer", ms)
	}
	if followerTries.Load() == 0 {
		t.Errorf("the follower was never asked, so nothing was hedged")
	}

	// The same round with a try timeout below the leader's delay fails.
	seq := newClient(t, addrs, client.WithTryTimeout(100*time.Millisecond), client.WithRetryFor(0))
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if _, err := seq.Machines(ctx2); err == nil {
		t.Errorf("sequential tries with a 100 ms try timeout reached a leader that answers in %v", slow)
	}
}

// A definite answer (4xx) from the first server ends a hedged request at
// once, as it does an unhedged one.
func TestHedgeStopsAtADefiniteAnswer(t *testing.T) {
	var second atomic.Int32
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"no such machine"}`, http.StatusNotFound)
	}))
	defer refuse.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		second.Add(1)
		jsonHandler(t, 200, []client.Machine{})(w, r)
	}))
	defer other.Close()
	c := newClient(t, []string{refuse.URL, other.URL}, client.WithHedge(time.Second), client.WithRetryFor(0))
	_, err := c.Machines(context.Background())
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("err = %v, want the first server's 404", err)
	}
	if n := second.Load(); n != 0 {
		t.Errorf("the second server was asked %d times after a definite answer", n)
	}
}
