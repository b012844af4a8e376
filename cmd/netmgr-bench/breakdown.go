package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/netmgr/netmgr/server/servertest"
)

// stageMetrics are the /metrics series whose means, over a phase, say
// where submit->registered goes: the leader's Raft commits of the
// commands on the path (a SubmitPlace is a Submit and a Place in one; a
// batch of CHILD events is one ChildEvents), its dispatch of the Start
// (which ends once the CHILD_REGISTER the stub answered with is
// committed), and the stubs' start. The stubs' event delivery is now
// their CHILD_TERMs', off the path, and tells how busy the sender is.
// Stages that did not occur in a phase are left out.
var stageMetrics = []struct{ label, series string }{
	{"SubmitPlace commit", `netmgr_server_raft_commit_seconds{command="SubmitPlace"}`},
	{"Submit commit", `netmgr_server_raft_commit_seconds{command="Submit"}`},
	{"Place commit", `netmgr_server_raft_commit_seconds{command="Place"}`},
	{"placed->Start answered and REGISTER committed", `netmgr_server_dispatch_start_latency_seconds`},
	{"stub start", `netmgr_stub_start_seconds`},
	{"event delivery (TERMs)", `netmgr_stub_event_delivery_seconds`},
	{"ChildRegister commit", `netmgr_server_raft_commit_seconds{command="ChildRegister"}`},
	{"ChildEvents commit", `netmgr_server_raft_commit_seconds{command="ChildEvents"}`},
}

// stageSums reads the _sum and _count of every stage metric from the
// leader and the stubs, adding the stubs' together.
func stageSums(ctx context.Context, c *servertest.ProcCluster) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	i, _ := c.Leader()
	if i < 0 {
		return nil, fmt.Errorf("read stage metrics: no leader")
	}
	urls := []string{c.Servers[i].URL() + "/metrics"}
	for _, st := range c.Stubs {
		urls = append(urls, st.URL()+"/metrics")
	}
	out := make(map[string]float64)
	hc := c.HTTPClient()
	for _, u := range urls {
		m, err := scrapeMetrics(ctx, hc, u)
		if err != nil {
			return nil, err
		}
		for _, s := range stageMetrics {
			for _, part := range []string{"_sum", "_count"} {
				out[withSuffix(s.series, part)] += m[withSuffix(s.series, part)]
			}
		}
	}
	return out, nil
}

// withSuffix puts suffix after a series' name, before its labels.
func withSuffix(series, suffix string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i] + suffix + series[i:]
	}
	return series + suffix
}

// breakdown says, from two stageSums readings around a phase, the mean of
// each stage in milliseconds. The stages overlap (a commit includes its
// Apply, dispatch includes the stub's start), so they do not add up.
func breakdown(before, after map[string]float64) string {
	var parts []string
	for _, s := range stageMetrics {
		n := after[withSuffix(s.series, "_count")] - before[withSuffix(s.series, "_count")]
		if n <= 0 {
			continue
		}
		sum := after[withSuffix(s.series, "_sum")] - before[withSuffix(s.series, "_sum")]
		parts = append(parts, fmt.Sprintf("%s %.1f", s.label, sum/n*1000))
	}
	return "mean ms from /metrics: " + strings.Join(parts, ", ")
}
