package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func jsonHandler(t *testing.T, status int, v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Errorf("encode: %v", err)
		}
	}
}

func newClient(t *testing.T, addrs []string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(addrs, opts...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

func TestFailsOverToALiveServer(t *testing.T) {
	live := httptest.NewServer(jsonHandler(t, 200, []client.Machine{{Name: "m1"}}))
	defer live.Close()
	c := newClient(t, []string{deadAddr(t), live.URL})
	ms, err := c.Machines(context.Background())
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	if len(ms) != 1 || ms[0].Name != "m1" {
		t.Errorf("got %+v, want one machine m1", ms)
	}
}

func TestRetriesWhileNoLeader(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			jsonHandler(t, 503, client.ErrorResponse{Error: "no leader"})(w, r)
			return
		}
		jsonHandler(t, 200, []client.Job{})(w, r)
	}))
	defer srv.Close()
	c := newClient(t, []string{srv.URL})
	if _, err := c.Jobs(context.Background()); err != nil {
		t.Fatalf("jobs: %v", err)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("got %d calls, want 3 (two 503s then success)", got)
	}
}

func TestDefiniteErrorsAreNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		jsonHandler(t, 404, client.ErrorResponse{Error: `job "x": no such job`})(w, r)
	}))
	defer srv.Close()
	c := newClient(t, []string{srv.URL, srv.URL})
	_, err := c.Job(context.Background(), "x")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("got %v, want a 404 APIError matching ErrNotFound", err)
	}
	if err.Error() != `job "x": no such job` {
		t.Errorf("got message %q, want the server's", err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("got %d calls, want 1", got)
	}
}

func TestUnreachableNamesEveryAddressTried(t *testing.T) {
	a, b := deadAddr(t), deadAddr(t)
	c := newClient(t, []string{a + "," + b}, client.WithRetryFor(200*time.Millisecond))
	_, err := c.Jobs(context.Background())
	if !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("got %v, want ErrNoServer", err)
	}
	for _, addr := range []string{"http://" + a, "http://" + b} {
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name %s", err, addr)
		}
	}
}

func TestFollowsLeaderRedirectWithBody(t *testing.T) {
	var got client.SubmitRequest
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("leader decode: %v", err)
		}
		if u := r.Header.Get(client.UserHeader); u != "alice" {
			t.Errorf("leader got user %q, want alice", u)
		}
		jsonHandler(t, 200, client.SubmitResponse{ID: 7, Name: "j", Owner: "alice"})(w, r)
	}))
	defer leader.Close()
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, leader.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer follower.Close()

	c := newClient(t, []string{follower.URL}, client.WithUser("alice"))
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, Min: 2}
	resp, err := c.Submit(context.Background(), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if resp.ID != 7 {
		t.Errorf("got id %d, want 7", resp.ID)
	}
	if got.Spec.Min != 2 || got.Spec.Binaries[client.AnyKey] != "/bin/true" {
		t.Errorf("leader got spec %+v, want the submitted one", got.Spec)
	}
	if len(got.IdempotencyKey) != 32 {
		t.Errorf("got idempotency key %q, want one generated for the submit", got.IdempotencyKey)
	}
}

func TestNoAddress(t *testing.T) {
	if _, err := client.New([]string{" , "}); !errors.Is(err, client.ErrNoAddress) {
		t.Errorf("got %v, want ErrNoAddress", err)
	}
}

func TestJobReached(t *testing.T) {
	job := func(states ...string) client.Job {
		var j client.Job
		for i, s := range states {
			j.Instances = append(j.Instances, client.Instance{Index: i, State: s})
		}
		return j
	}
	tests := []struct {
		name  string
		job   client.Job
		until string
		want  bool
	}{
		{"running is started", job(client.InstanceRunning), client.WaitStarted, true},
		{"placed is not started", job(client.InstanceRunning, client.InstancePlaced), client.WaitStarted, false},
		{"failed counts as started", job(client.InstanceFailed), client.WaitStarted, true},
		{"running is not done", job(client.InstanceExited, client.InstanceRunning), client.WaitDone, false},
		{"all ended is done", job(client.InstanceExited, client.InstanceKilled, client.InstanceLost), client.WaitDone, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := client.JobReached(tt.job, tt.until); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTryTimeoutSkipsAHangingServer: a server that accepts connections but
// never answers (as a partitioned one may) costs only the try timeout.
func TestTryTimeoutSkipsAHangingServer(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	live := httptest.NewServer(jsonHandler(t, 200, []client.Machine{}))
	defer live.Close()
	c := newClient(t, []string{hang.URL, live.URL}, client.WithTryTimeout(100*time.Millisecond), client.WithRetryFor(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := c.Machines(ctx); err != nil {
		t.Fatalf("machines: %v", err)
	}
	// The failed server is no longer preferred: the next call goes straight
	// to the live one.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := c.Machines(ctx2); err != nil {
		t.Errorf("second call did not go to the live server first: %v", err)
	}
}

// A follower's answer names the leader (LeaderHeader); a client that
// knows the leader's address sends there from then on, and one that does
// not keeps using the server that answered.
func TestPrefersTheLeaderNamedInAnswers(t *testing.T) {
	var toLeader, toFollower atomic.Int32
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toLeader.Add(1)
		w.Header().Set(client.LeaderHeader, r.Host)
		jsonHandler(t, 200, []client.Machine{})(w, r)
	}))
	defer leader.Close()
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toFollower.Add(1)
		w.Header().Set(client.LeaderHeader, strings.TrimPrefix(leader.URL, "http://"))
		jsonHandler(t, 200, []client.Machine{})(w, r)
	}))
	defer follower.Close()

	c := newClient(t, []string{follower.URL, leader.URL})
	for range 3 {
		if _, err := c.Machines(context.Background()); err != nil {
			t.Fatalf("machines: %v", err)
		}
	}
	if got, want := [2]int32{toFollower.Load(), toLeader.Load()}, [2]int32{1, 2}; got != want {
		t.Errorf("got %d requests to the follower and %d to the leader, want %d and %d", got[0], got[1], want[0], want[1])
	}

	// The leader named is not among the client's servers: stay.
	toFollower.Store(0)
	other := newClient(t, []string{follower.URL})
	for range 2 {
		if _, err := other.Machines(context.Background()); err != nil {
			t.Fatalf("machines: %v", err)
		}
	}
	if got := toFollower.Load(); got != 2 {
		t.Errorf("got %d requests to the follower, want 2", got)
	}
}
