package expiry

import (
	"fmt"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty/dutytest"
	"github.com/netmgr/netmgr/server/lease"
)

// BenchmarkExpireAtRest10k is what the leader pays for one lease-expiry
// look at 10,000 machines that all renewed in time (issue 36 point 2:
// idle cost on the leader): nothing to expire, so the look should cost a
// pass over the table, not a locked lookup per machine and field.
func BenchmarkExpireAtRest10k(b *testing.B) {
	h := dutytest.New()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	table := lease.NewTable(t0, nil)
	for i := range 10_000 {
		name := fmt.Sprintf("m%05d", i)
		h.MustApply(b, fsm.StubJoinType, fsm.StubJoin{At: t0, Machine: fsm.MachineFacts{Name: name, Arch: "x86_64", CPUs: 4, MemoryMB: 1024, Addr: "127.0.0.1:1"}})
	}
	now := t0.Add(time.Minute)
	for i := range 10_000 {
		table.Renew(fmt.Sprintf("m%05d", i), now.Add(-time.Duration(i%500)*time.Millisecond), nil, nil, 0, 10_000, 0)
	}
	k := New(h, promtext.NewCounter("expired", "help"))
	before := h.Index()
	b.ResetTimer()
	for range b.N {
		k.Expire(table, now)
	}
	b.StopTimer()
	if h.Index() != before {
		b.Fatalf("a look at machines that all renewed in time committed %d entries", h.Index()-before)
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/look")
}
