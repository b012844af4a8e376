package server

import (
	"encoding/json"
	"io"
	"net/url"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// scaleFSM is a state of 1,000 machines and 10,000 jobs, the dashboard's
// scale (issue 21).
func scaleFSM(tb testing.TB) *fsm.FSM {
	tb.Helper()
	f := fsm.New()
	if _, err := fsmscale.Build(f, fsmscale.Params{Machines: 1000, Jobs: 10000}); err != nil {
		tb.Fatalf("build: %v", err)
	}
	return f
}

// The filters select, the page is newest first, and the total counts
// every job that passes.
func TestJobFilterPages(t *testing.T) {
	t.Parallel()
	f := scaleFSM(t)
	f.Read(func(v fsm.View) {
		all := v.Jobs()
		q, _ := url.ParseQuery("limit=50&offset=100")
		jf, err := parseJobFilter(q)
		if err != nil {
			t.Fatal(err)
		}
		page, total := jf.page(v, all)
		if total != len(all) || len(page) != 50 || page[0].ID != all[len(all)-101].ID || page[0].ID <= page[1].ID {
			t.Fatalf("page of 50 at 100: %d jobs from id %d, total %d of %d", len(page), page[0].ID, total, len(all))
		}
		owner := all[0].Owner
		jf = jobFilter{owner: owner, state: jobStateToWire(all[0].State())}
		page, total = jf.page(v, all)
		want := 0
		for _, j := range all {
			if j.Owner == owner && j.State() == all[0].State() {
				want++
			}
		}
		if total != want || len(page) != min(want, maxJobPage) {
			t.Fatalf("owner %s, state %s: %d jobs, total %d; want total %d", owner, jf.state, len(page), total, want)
		}
		for _, j := range page {
			if j.Owner != owner || j.State != jf.state {
				t.Fatalf("job %d of %s in state %s passed the filter", j.ID, j.Owner, j.State)
			}
		}
	})
	if _, err := parseJobFilter(url.Values{"limit": {"-1"}}); err == nil {
		t.Error("limit=-1 accepted")
	}
}

// BenchmarkJobsPage50Of10000 is what the dashboard's jobs view costs a
// server with 10,000 jobs: one page of 50, encoded.
func BenchmarkJobsPage50Of10000(b *testing.B) {
	f := scaleFSM(b)
	jf := jobFilter{limit: 50}
	b.ResetTimer()
	for range b.N {
		var page []client.Job
		f.Read(func(v fsm.View) { page, _ = jf.page(v, v.Jobs()) })
		if err := json.NewEncoder(io.Discard).Encode(page); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobsAllOf10000 is the unpaged list, for comparison: what a
// page would cost without the filters.
func BenchmarkJobsAllOf10000(b *testing.B) {
	f := scaleFSM(b)
	b.ResetTimer()
	for range b.N {
		var all []client.Job
		f.Read(func(v fsm.View) {
			for _, j := range v.Jobs() {
				all = append(all, jobToWire(v, j))
			}
		})
		if err := json.NewEncoder(io.Discard).Encode(all); err != nil {
			b.Fatal(err)
		}
	}
}
