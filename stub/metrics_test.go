package stub

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestMetricsEventBacklog checks the outbox metrics while no server takes
// the events, then once one does: the backlog holds both events of an
// attempt and drains to zero, and each delivery is counted and timed.
func TestMetricsEventBacklog(t *testing.T) {
	srv := newFakeServer(t, http.StatusServiceUnavailable)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/true"}
	mustStart(t, stubClient(t, s), req)

	names := []string{"netmgr_stub_event_backlog", "netmgr_stub_events_delivered_total", "netmgr_stub_running_attempts"}
	expect := func(backlog, delivered int) string {
		return `
# HELP netmgr_stub_event_backlog CHILD events in the outbox that no server has answered yet (NaN if the outbox cannot be read).
# TYPE netmgr_stub_event_backlog gauge
netmgr_stub_event_backlog ` + itoa(uint64(backlog)) + `
# HELP netmgr_stub_events_delivered_total CHILD events a server answered (accepted, stale or rejected), so removed from the outbox.
# TYPE netmgr_stub_events_delivered_total counter
netmgr_stub_events_delivered_total ` + itoa(uint64(delivered)) + `
# HELP netmgr_stub_running_attempts Attempts whose supervisor runs and whose end is not recorded yet.
# TYPE netmgr_stub_running_attempts gauge
netmgr_stub_running_attempts 0
`
	}
	testwait.For(t, waitTimeout, "two undelivered events", func() bool {
		return metricsText(t, s, names...) == strings.TrimSpace(expect(2, 0))
	})

	srv.mu.Lock()
	srv.status = http.StatusOK
	srv.mu.Unlock()
	testwait.For(t, waitTimeout, "the backlog to drain", func() bool {
		return metricsText(t, s, names...) == strings.TrimSpace(expect(0, 2))
	})
	if h := histogramCount(t, s, "netmgr_stub_event_delivery_seconds"); h != 2 {
		t.Errorf("deliveries timed = %d, want 2", h)
	}
	if h := histogramCount(t, s, "netmgr_stub_start_seconds"); h != 1 {
		t.Errorf("starts timed = %d, want 1", h)
	}
}

// metricsText is the text page of the stub's families names, trimmed.
func metricsText(t *testing.T, s *Stub, names ...string) string {
	t.Helper()
	var b strings.Builder
	if err := s.metrics.reg.Write(&b, names...); err != nil {
		t.Fatalf("write metrics: %v", err)
	}
	return strings.TrimSpace(b.String())
}

// histogramCount is the number of observations of the stub's histogram
// name.
func histogramCount(t *testing.T, s *Stub, name string) uint64 {
	t.Helper()
	for _, f := range s.metrics.reg.Gather() {
		if f.Name == name {
			return f.Samples[0].Hist.Count
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestMetricsEndpoint checks that GET /metrics serves the stub's registry
// in the Prometheus text format, Go runtime metrics included.
func TestMetricsEndpoint(t *testing.T) {
	s := newTestStub(t, Config{})
	resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %s, Content-Type %q; want 200 text/plain; version=0.0.4", resp.Status, ct)
	}
	for _, want := range []string{
		"\nnetmgr_stub_event_backlog 0\n",
		"\nnetmgr_stub_lease_remaining_seconds ",
		"\nnetmgr_stub_gossip_members 1\n",
		"\nnetmgr_stub_gossip_servers 0\n",
		"\ngo_goroutines ",
		"\nprocess_open_fds ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}
