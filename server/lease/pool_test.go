package lease

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/netmgr/netmgr/fsm"
)

// applyAll applies the commands to a new database, one log index each.
func applyAll(t *testing.T, cmds ...func() (fsm.MessageType, any)) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	for i, cmd := range cmds {
		typ, body := cmd()
		data, err := fsm.Encode(typ, body)
		if err != nil {
			t.Fatal(err)
		}
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: uint64(i + 1), Data: data}).(*fsm.Result)
		if res.Err != nil {
			t.Fatalf("apply %v: %v", typ, res.Err)
		}
	}
	return f
}

func join(name string) func() (fsm.MessageType, any) {
	return func() (fsm.MessageType, any) {
		return fsm.StubJoinType, fsm.StubJoin{At: time.Unix(0, 0).UTC(), Machine: fsm.MachineFacts{Name: name, Arch: "amd64", CPUs: 1}}
	}
}

func leave(name string) func() (fsm.MessageType, any) {
	return func() (fsm.MessageType, any) {
		return fsm.StubLeaveType, fsm.StubLeave{At: time.Unix(0, 0).UTC(), Machine: name, Reason: "failed"}
	}
}

// The pool is ordered by first join, not by name or by the latest join:
// a machine that leaves and joins again keeps its place, a new machine
// goes last, and every reader of the same database gets the same order.
func TestPoolOrderIsFirstJoinOrder(t *testing.T) {
	f := applyAll(t, join("c"), join("a"), join("b"), leave("a"), join("a"), join("aa"))
	var order, again *PoolOrder
	f.Read(func(v fsm.View) { order = NewPoolOrder(v) })
	f.Read(func(v fsm.View) { again = NewPoolOrder(v) })
	want := []string{"c", "a", "b", "aa"}
	if !slices.Equal(order.names, want) {
		t.Fatalf("pool order %v, want %v (first join)", order.names, want)
	}
	if !slices.Equal(again.names, order.names) {
		t.Errorf("a second read ordered %v, the first %v", again.names, order.names)
	}
	if order.Size() != 4 {
		t.Errorf("size %d, want 4", order.Size())
	}
	for i, name := range want {
		if got := order.Position(name); got != i+1 {
			t.Errorf("position of %s = %d, want %d", name, got, i+1)
		}
	}
	if got := order.Position("never"); got != 0 {
		t.Errorf("position of a machine never seen = %d, want 0", got)
	}
}
