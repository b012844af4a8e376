package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// noticeLog collects the wait notices of a client.
type noticeLog struct {
	mu   sync.Mutex // guards msgs
	msgs []string
}

func (n *noticeLog) add(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, msg)
}

func (n *noticeLog) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.msgs...)
}

// A request nothing answers gives up after WithGiveUpUnanswered's time,
// well before its retry period.
func TestGiveUpUnansweredFailsFast(t *testing.T) {
	c := newClient(t, []string{deadAddr(t)}, client.WithRetryFor(time.Minute), client.WithGiveUpUnanswered(200*time.Millisecond))
	start := time.Now()
	_, err := c.Machines(context.Background())
	if !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("Machines() error = %v, want ErrNoServer", err)
	}
	if got, limit := time.Since(start), 5*time.Second; got > limit {
		t.Errorf("Machines() gave up after %v, want well under %v", got, limit)
	}
}

// Once a server answers, even "no leader", the whole retry period applies.
func TestGiveUpUnansweredWaitsForAnElection(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 6 { // about 25+50+100+200+400 ms of backoff
			jsonHandler(t, http.StatusServiceUnavailable, client.ErrorResponse{Error: "no leader"})(w, r)
			return
		}
		jsonHandler(t, http.StatusOK, []client.Machine{{Name: "m1"}})(w, r)
	}))
	defer srv.Close()
	c := newClient(t, []string{srv.URL}, client.WithRetryFor(time.Minute), client.WithGiveUpUnanswered(50*time.Millisecond))
	ms, err := c.Machines(context.Background())
	if err != nil || len(ms) != 1 {
		t.Fatalf("Machines() = %v, %v; want m1 after the election", ms, err)
	}
}

func TestWaitNotice(t *testing.T) {
	noLeader := httptest.NewServer(jsonHandler(t, http.StatusServiceUnavailable, client.ErrorResponse{Error: "no leader"}))
	defer noLeader.Close()
	dead := deadAddr(t)
	tests := []struct {
		name string
		addr string
		want string
	}{
		{"nothing answers", dead, "waiting for a server to answer at http://" + dead + " ("},
		{"no leader", noLeader.URL, "waiting for the server group to have a leader ("},
	}
	sock := filepath.Join(t.TempDir(), "stub.sock")
	t.Run("no stub on the socket", func(t *testing.T) {
		var log noticeLog
		c := newClient(t, nil, client.WithUnixSocket(sock), client.WithRetryFor(time.Second),
			client.WithWaitNotice(200*time.Millisecond, log.add))
		if _, err := c.Machines(context.Background()); !errors.Is(err, client.ErrNoServer) {
			t.Fatalf("Machines() error = %v, want ErrNoServer", err)
		}
		want := "waiting for a server to answer at the local stub's socket " + sock + " ("
		if msgs := log.all(); len(msgs) != 1 || !strings.HasPrefix(msgs[0], want) {
			t.Errorf("notices = %q, want one starting %q", msgs, want)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log noticeLog
			c := newClient(t, []string{tt.addr}, client.WithRetryFor(1500*time.Millisecond),
				client.WithWaitNotice(300*time.Millisecond, log.add))
			start := time.Now()
			if _, err := c.Machines(context.Background()); !errors.Is(err, client.ErrNoServer) {
				t.Fatalf("Machines() error = %v, want ErrNoServer", err)
			}
			if got := time.Since(start); got < 300*time.Millisecond {
				t.Errorf("Machines() gave up after %v, before the notice was due", got)
			}
			msgs := log.all()
			if len(msgs) != 1 || !strings.HasPrefix(msgs[0], tt.want) {
				t.Fatalf("notices = %q, want one starting %q", msgs, tt.want)
			}
		})
	}
}

// A request answered at once sends no notice.
func TestNoWaitNoticeWhenAnswered(t *testing.T) {
	srv := httptest.NewServer(jsonHandler(t, http.StatusOK, []client.Machine{{Name: "m1"}}))
	defer srv.Close()
	var log noticeLog
	c := newClient(t, []string{srv.URL}, client.WithWaitNotice(0, log.add))
	if _, err := c.Machines(context.Background()); err != nil {
		t.Fatal(err)
	}
	if msgs := log.all(); len(msgs) != 0 {
		t.Errorf("notices = %q, want none", msgs)
	}
}

func TestJitteredSpreadsAroundTheWait(t *testing.T) {
	const d = 100 * time.Millisecond
	var sum time.Duration
	seen := make(map[time.Duration]bool)
	for range 2000 {
		w := client.Jittered(d)
		if w < d/2 || w >= 3*d/2 {
			t.Fatalf("client.Jittered(%v) = %v, outside [%v, %v)", d, w, d/2, 3*d/2)
		}
		sum += w
		seen[w] = true
	}
	if mean := sum / 2000; mean < 90*time.Millisecond || mean > 110*time.Millisecond {
		t.Errorf("mean of 2,000 client.Jittered(%v) = %v, want about %v", d, mean, d)
	}
	if len(seen) < 1000 {
		t.Errorf("2,000 client.Jittered(%v) took only %d values: retries would come in step", d, len(seen))
	}
	if got := client.Jittered(1); got != 1 {
		t.Errorf("client.Jittered(1ns) = %v, want 1ns", got)
	}
}

// LeaseRetryWait paces a stub's retries of a failed renewal with its
// interval, at random around the pace.
func TestLeaseRetryWaitScalesWithTheInterval(t *testing.T) {
	for _, tc := range []struct{ every, lo, hi time.Duration }{
		{500 * time.Millisecond, 250 * time.Millisecond, 750 * time.Millisecond},
		{900 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond},
		{3 * time.Second, time.Second, 3 * time.Second},
	} {
		for range 200 {
			if w := client.LeaseRetryWait(tc.every); w < tc.lo || w >= tc.hi {
				t.Fatalf("LeaseRetryWait(%v) = %v, want within [%v, %v)", tc.every, w, tc.lo, tc.hi)
			}
		}
	}
}
