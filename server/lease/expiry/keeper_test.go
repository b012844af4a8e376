package expiry

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty/dutytest"
	"github.com/netmgr/netmgr/server/lease"
)

// A machine that never renewed to this leadership keeps its lease for
// the plain rule and the longest outage grace any leader may have told
// it (it proved no shorter one); past that the keeper commits one
// LeaseExpired, counts it, and does not expire the machine again.
func TestKeeperExpiresASilentMachine(t *testing.T) {
	h := dutytest.New()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h.MustApply(t, fsm.StubJoinType, fsm.StubJoin{At: t0, Machine: fsm.MachineFacts{Name: "m1", Arch: "x86_64", CPUs: 2, MemoryMB: 1024, Addr: "127.0.0.1:1"}})
	table := lease.NewTable(t0, nil)
	count := promtext.NewCounter("expired", "help")
	k := New(h, count)

	state := func() string {
		var st string
		h.Read(func(v fsm.View) {
			if m, ok := v.Machine("m1"); ok {
				st = m.State
			}
		})
		return st
	}
	plain := lease.Duration + lease.Margin
	k.Expire(table, t0.Add(plain+time.Second))
	if got := state(); got != fsm.MachineUp || count.Value() != 0 {
		t.Fatalf("within the outage grace: machine %s, %v expired, want up and none", got, count.Value())
	}
	past := t0.Add(plain + lease.MaxOutageGrace + time.Second)
	k.Expire(table, past)
	if got := state(); got != fsm.MachineUnreachable || count.Value() != 1 {
		t.Fatalf("past the outage grace: machine %s, %v expired, want %s and 1", got, count.Value(), fsm.MachineUnreachable)
	}
	before := h.Index()
	k.Expire(table, past.Add(time.Second))
	if h.Index() != before || count.Value() != 1 {
		t.Errorf("an unreachable machine's lease was expired again")
	}
}
