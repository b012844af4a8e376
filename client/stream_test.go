package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// Logs tries again while the group has no leader, as the other requests
// do, returns the stream once a server answers it, and returns a
// definite refusal at once.
func TestLogsRetriesThenStreams(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/jobs/7/logs" && calls.Add(1) < 3:
			jsonHandler(t, 503, client.ErrorResponse{Error: "no leader"})(w, r)
		case r.URL.Path == "/v1/jobs/7/logs":
			if q := r.URL.Query(); q.Get("instance") != "2" || q.Get("stream") != "stderr" || q.Get("follow") != "1" {
				t.Errorf("query %q, want instance 2, stderr, follow", r.URL.RawQuery)
			}
			fmt.Fprint(w, "out\n")
		default:
			jsonHandler(t, 403, client.ErrorResponse{Error: "permission denied: not yours"})(w, r)
		}
	}))
	defer srv.Close()
	c := newClient(t, []string{srv.URL})
	body, err := c.Logs(context.Background(), "7", client.LogsQuery{Instance: 2, Stream: client.LogStderr, Follow: true})
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	if err != nil || string(got) != "out\n" || calls.Load() != 3 {
		t.Errorf("logs = %q, %v after %d calls; want %q after two 503s", got, err, calls.Load(), "out\n")
	}
	_, err = c.Logs(context.Background(), "8", client.LogsQuery{})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 403 || apiErr.Message != "permission denied: not yours" {
		t.Errorf("logs of another's job: %v, want the 403 and its message", err)
	}
}
