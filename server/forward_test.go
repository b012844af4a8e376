package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// Every answer the leader gives names it (LeaderHeader), also when a
// follower forwarded the write or redirected the read, so clients can
// skip the follower next time.
func TestAnswersNameTheLeader(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	follower := (leader + 1) % 3
	want := c.Servers[leader].HTTPAddr()
	for _, tc := range []struct {
		name, method, path, body string
	}{
		{"forwarded write", http.MethodPost, "/v1/jobs/424242/kill", `{}`},
		{"redirected read", http.MethodGet, "/v1/machines", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx(t), tc.method, c.URL(c.Servers[follower].HTTPAddr(), tc.path), strings.NewReader(tc.body))
			if err != nil {
				t.Fatalf("build request: %v", err)
			}
			resp, err := c.HTTPClient().Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			resp.Body.Close()
			if got := resp.Header.Get(client.LeaderHeader); got != want {
				t.Errorf("got %s %q (status %d), want the leader %q", client.LeaderHeader, got, resp.StatusCode, want)
			}
		})
	}
}
