package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// scrape reads GET /metrics at addr and returns each sample by its series,
// name{label="value",...} in the order the page gives the labels; a
// histogram gives its _count and _sum.
func scrape(t *testing.T, c *servertest.Cluster, addr string) map[string]float64 {
	t.Helper()
	resp, err := get(c, addr, "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics from %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics from %s: %s, Content-Type %q; want 200 text/plain", addr, resp.Status, ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics from %s: %v", addr, err)
	}
	out := make(map[string]float64)
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			series := func(name string) string {
				if len(labels) == 0 {
					return name
				}
				return name + "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Histogram != nil:
				out[series(name+"_count")] = float64(m.GetHistogram().GetSampleCount())
				out[series(name+"_sum")] = m.GetHistogram().GetSampleSum()
			case m.Counter != nil:
				out[series(name)] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[series(name)] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestMetricsAfterAJob runs one job through a three-server group and checks
// what an operator reads from the servers' and the stub's /metrics.
func TestMetricsAfterAJob(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha")
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/true"},
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if _, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone); err != nil {
		t.Fatalf("wait: %v", err)
	}
	leader := c.WaitLeader()

	// The stub's backlog drains once the servers have answered both of the
	// attempt's events (CHILD_REGISTER, CHILD_TERM).
	stubAddr := c.Stubs[0].HTTPAddr()
	var st map[string]float64
	testwait.For(t, 10*time.Second, "the stub's event backlog to drain", func() bool {
		st = scrape(t, c, stubAddr)
		return st["netmgr_stub_event_backlog"] == 0 && st["netmgr_stub_running_attempts"] == 0
	})
	stubChecks := []struct {
		series string
		ok     func(float64) bool
		want   string
	}{
		{"netmgr_stub_events_delivered_total", func(v float64) bool { return v >= 2 }, ">= 2"},
		{"netmgr_stub_event_delivery_seconds_count", func(v float64) bool { return v >= 2 }, ">= 2"},
		{"netmgr_stub_start_seconds_count", func(v float64) bool { return v == 1 }, "1"},
		{"netmgr_stub_lease_remaining_seconds", func(v float64) bool { return v > 0 }, "> 0"},
		{"netmgr_stub_gossip_members", func(v float64) bool { return v >= 2 }, ">= 2"},
		{"netmgr_stub_gossip_servers", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"go_goroutines", func(v float64) bool { return v > 0 }, "> 0"},
	}
	for _, tc := range stubChecks {
		if v, ok := st[tc.series]; !ok || !tc.ok(v) {
			t.Errorf("stub %s = %v (present %v), want %s", tc.series, v, ok, tc.want)
		}
	}

	// Exactly one server says it leads, and it is the one Raft says leads.
	// On a loaded machine leadership may move meanwhile, and a deposed
	// leader says so only once it notices: look again until they agree.
	testwait.For(t, 15*time.Second, "exactly one server reporting is_leader 1, the leader", func() bool {
		leader = c.WaitLeader()
		leaders, who := 0, -1
		for i, s := range c.Servers {
			if scrape(t, c, s.HTTPAddr())["netmgr_server_raft_is_leader"] == 1 {
				leaders, who = leaders+1, i
			}
		}
		return leaders == 1 && who == leader
	})

	lm := scrape(t, c, c.Servers[leader].HTTPAddr())
	serverChecks := []struct {
		series string
		ok     func(float64) bool
		want   string
	}{
		{"netmgr_server_raft_applied_index", func(v float64) bool { return v > 0 }, "> 0"},
		{"netmgr_server_raft_commit_index", func(v float64) bool { return v >= lm["netmgr_server_raft_applied_index"] }, ">= applied index"},
		{"netmgr_server_raft_term", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"netmgr_server_raft_elections_total", func(v float64) bool { return v >= 1 }, ">= 1"},
		// The job was placed by a Place, or with its submit by a SubmitPlace.
		{"netmgr_server_raft_applied_index", func(float64) bool {
			return lm[`netmgr_server_raft_commit_seconds_count{command="Place"}`]+
				lm[`netmgr_server_raft_commit_seconds_count{command="SubmitPlace"}`] >= 1
		}, "a Place or SubmitPlace commit"},
		{"netmgr_server_scheduler_pass_seconds_count", func(v float64) bool { return v > 0 }, "> 0"},
		{"netmgr_server_scheduler_pass_placed_instances_sum", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"netmgr_server_dispatch_start_latency_seconds_count", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"netmgr_server_dispatch_starts_failed_total", func(v float64) bool { return v == 0 }, "0"},
		{"netmgr_server_dispatch_start_requests_total", func(v float64) bool { return v >= 1 }, ">= 1"},
		{`netmgr_server_http_requests_total{route="POST /v1/jobs"}`, func(v float64) bool { return v >= 1 }, ">= 1 (the submit, forwarded or not)"},
		{`netmgr_server_http_requests_total{route="POST /v1/children"}`, func(v float64) bool { return v >= 1 }, ">= 1 (the TERM)"},
		{`netmgr_server_queue_queued_instances{queue="default"}`, func(v float64) bool { return v == 0 }, "0"},
		{`netmgr_server_queue_active_instances{queue="default"}`, func(v float64) bool { return v == 0 }, "0"},
		{`netmgr_server_machines{state="up"}`, func(v float64) bool { return v == 1 }, "1"},
		{`netmgr_server_machines{state="down"}`, func(v float64) bool { return v == 0 }, "0"},
		{"netmgr_server_gossip_members", func(v float64) bool { return v == 4 }, "4 (3 servers, 1 stub)"},
		{"netmgr_server_gossip_health_score", func(v float64) bool { return v >= 0 }, ">= 0"},
		{"process_resident_memory_bytes", func(v float64) bool { return v > 0 }, "> 0"},
	}
	for _, tc := range serverChecks {
		if v, ok := lm[tc.series]; !ok || !tc.ok(v) {
			t.Errorf("leader %s = %v (present %v), want %s", tc.series, v, ok, tc.want)
		}
	}
}
