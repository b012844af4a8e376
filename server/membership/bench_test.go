package membership

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty/dutytest"
)

// BenchmarkReconcileFullPass is one full membership pass over a pool of
// n machines, every one up in the database and alive in gossip, as each
// pass is while a large pool joins (the database gains a machine between
// two passes, so no pass repeats the last): the pool copied, as the
// server's Config.Pool copies it, and every machine looked at: the cost
// that, ten times a second, made the passes and the lease expiry a
// quarter of the leader's CPU at 4,000 machines joining (before the
// look took the database in no order, fsm.View.EachMachine, and the
// gap between passes grew with the pool, server/leader_pace.go).
func BenchmarkReconcileFullPass(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			h := dutytest.New()
			pool := make(map[string]Member, n)
			for i := range n {
				name, addr := fmt.Sprintf("m%05d", i), fmt.Sprintf("10.0.%d.%d:7000", i/250, i%250)
				h.MustApply(b, fsm.StubJoinType, fsm.StubJoin{At: time.Unix(0, 0).UTC(),
					Machine: fsm.MachineFacts{Name: name, Arch: "amd64", CPUs: 4, Addr: addr}})
				pool[name] = stub(addr)
			}
			cfg := config(pool)
			cfg.Pool = func() map[string]Member { return maps.Clone(pool) }
			w := New(h, cfg)
			defer w.Wait()
			ctx := context.Background()
			b.ReportAllocs()
			next := n
			for b.Loop() {
				// A machine joined since the last pass, in both views.
				b.StopTimer()
				name, addr := fmt.Sprintf("m%05d", next), fmt.Sprintf("10.1.%d.%d:7000", next/250, next%250)
				h.MustApply(b, fsm.StubJoinType, fsm.StubJoin{At: time.Unix(0, 0).UTC(),
					Machine: fsm.MachineFacts{Name: name, Arch: "amd64", CPUs: 4, Addr: addr}})
				pool[name] = stub(addr)
				next++
				b.StartTimer()
				w.Reconcile(ctx)
			}
		})
	}
}
