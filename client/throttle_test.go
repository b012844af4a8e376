package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// throttler answers its first `refuse` requests 429 (with Retry-After
// when retryAfter is not empty) and the rest with ok.
type throttler struct {
	refuse     int32
	retryAfter string
	ok         http.HandlerFunc
	calls      atomic.Int32
}

func (th *throttler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if th.calls.Add(1) <= th.refuse {
		if th.retryAfter != "" {
			w.Header().Set("Retry-After", th.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":"too many requests: raise --user-rate"}`+"\n")
		return
	}
	th.ok(w, r)
}

// A 429 with Retry-After is waited out and the request sent again to the
// same server, up to a bound; one without, or asking for too long a wait,
// is an *APIError at once. Retry-After: 0 keeps the test fast.
func TestThrottledRequests(t *testing.T) {
	machines := jsonHandler(t, http.StatusOK, []client.Machine{{Name: "m1"}})
	for _, tc := range []struct {
		name       string
		refuse     int32
		retryAfter string
		wantErr    bool
		wantCalls  int32
	}{
		{"waited out", 3, "0", false, 4},
		{"given up after the bound", 1000, "0", true, 21},
		{"no Retry-After: at once", 1000, "", true, 1},
		{"too long a wait: at once", 1000, "3600", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := &throttler{refuse: tc.refuse, retryAfter: tc.retryAfter, ok: machines}
			srv := httptest.NewServer(th)
			defer srv.Close()
			other := &throttler{ok: machines}
			srv2 := httptest.NewServer(other)
			defer srv2.Close()
			c := newClient(t, []string{srv.URL, srv2.URL})
			ms, err := c.Machines(context.Background())
			var apiErr *client.APIError
			switch {
			case tc.wantErr && (!errors.As(err, &apiErr) || apiErr.Status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "--user-rate")):
				t.Errorf("Machines() error = %v, want the server's 429 as an *APIError", err)
			case !tc.wantErr && (err != nil || len(ms) != 1):
				t.Errorf("Machines() = %v, %v; want m1", ms, err)
			}
			if got := th.calls.Load(); got != tc.wantCalls {
				t.Errorf("the throttling server got %d requests, want %d", got, tc.wantCalls)
			}
			if got := other.calls.Load(); got != 0 {
				t.Errorf("the other server got %d requests, want 0 (a 429 is not a reason to go elsewhere)", got)
			}
		})
	}
}

// A stream (logs) and a followed events stream wait out a 429 with
// Retry-After as other requests do.
func TestThrottledStreams(t *testing.T) {
	logs := &throttler{refuse: 2, retryAfter: "0", ok: func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello\n")
	}}
	srv := httptest.NewServer(logs)
	defer srv.Close()
	c := newClient(t, []string{srv.URL})
	body, err := c.Logs(context.Background(), "7", client.LogsQuery{})
	if err != nil {
		t.Fatalf("Logs() error = %v, want the stream", err)
	}
	data, _ := io.ReadAll(body)
	body.Close()
	if string(data) != "hello\n" || logs.calls.Load() != 3 {
		t.Errorf("Logs() read %q after %d requests, want hello after 3", data, logs.calls.Load())
	}

	events := &throttler{refuse: 2, retryAfter: "0", ok: func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"index":5,"kind":"submitted"}`+"\n")
	}}
	esrv := httptest.NewServer(events)
	defer esrv.Close()
	c = newClient(t, []string{esrv.URL})
	stop := errors.New("stop")
	var got uint64
	err = c.FollowEvents(context.Background(), 0, func(e client.Event) error { got = e.Index; return stop })
	if !errors.Is(err, stop) || got != 5 || events.calls.Load() != 3 {
		t.Errorf("FollowEvents() = %v, event %d after %d requests; want event 5 after 3", err, got, events.calls.Load())
	}
}
