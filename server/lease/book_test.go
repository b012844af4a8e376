package lease

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/netmgr/netmgr/fsm"
)

// cmd is one command for a test's log.
type cmd struct {
	typ  fsm.MessageType
	body any
}

// applyTo applies cmds to f from log index next on, each alone or, every
// third, together with the next in one batch (as Raft hands the FSM
// several entries at once), and returns the next free index.
func applyTo(t *testing.T, f *fsm.FSM, next uint64, cmds ...cmd) uint64 {
	t.Helper()
	var logs []*raft.Log
	for i, c := range cmds {
		data, err := fsm.Encode(c.typ, c.body)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, &raft.Log{Type: raft.LogCommand, Index: next, Data: data})
		next++
		if i%3 == 2 && i+1 < len(cmds) {
			continue // batched with the next
		}
		for _, r := range f.ApplyBatch(logs) {
			if res := r.(*fsm.Result); res.Err != nil {
				t.Fatalf("apply at %d: %v", res.Index, res.Err)
			}
		}
		logs = nil
	}
	return next
}

// machineEntry is what the book should hold of m, as the view v says.
func machineEntry(v fsm.View, m *fsm.Machine, position int) Entry {
	settings, declared := v.OwnerSettings(m)
	e := Entry{State: m.State, Addr: m.Addr, ModifyIndex: m.ModifyIndex, CreateIndex: m.CreateIndex,
		Unhealthy: m.Unhealthy, Asleep: m.Asleep, Position: position}
	e.Owner.Settings, e.Owner.Declared = settings, declared
	return e
}

// checkBook fails unless b holds, for every machine of f, what a read of
// f says, and the join order NewPoolOrder computes from scratch.
func checkBook(t *testing.T, b *Book, f *fsm.FSM, when string) {
	t.Helper()
	f.Read(func(v fsm.View) {
		order := NewPoolOrder(v)
		if got := b.Pool(); !slices.Equal(got.names, order.names) {
			t.Errorf("%s: book's join order %v, from scratch %v", when, got.names, order.names)
		}
		if b.Size() != v.MachineCount() {
			t.Errorf("%s: book holds %d machines, the database %d", when, b.Size(), v.MachineCount())
		}
		for _, m := range v.Machines() {
			got, ok := b.Machine(m.Name)
			want := machineEntry(v, m, order.Position(m.Name))
			if !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: book holds %s as %+v (%v), the database %+v", when, m.Name, got, ok, want)
			}
		}
	})
}

// TestBookFollowsTheDatabase applies every command that changes a
// machine, in batches and alone, and checks after each step that the
// book an FSM keeps as it applies them holds what a read of the FSM says
// (state, address, indexes, health, owner verdict and settings, join
// position) without the book ever reading the FSM itself; then that a
// restored snapshot is taken in whole at the next entry.
func TestBookFollowsTheDatabase(t *testing.T) {
	at := time.Unix(1000, 0).UTC()
	joinAt := func(name, addr, mtype string) cmd {
		return cmd{fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: name, Arch: "amd64", CPUs: 1, Addr: addr, MType: mtype}}}
	}
	db := fsm.Database{
		MTypes:   []fsm.DeclaredMType{{Name: "desk", Owner: map[string]string{"max_load": "1"}}},
		Machines: []fsm.DeclaredMachine{{Name: "b", MType: "desk", Owner: map[string]string{"sleep_on_login": "yes"}}, {Name: "c"}},
	}
	f := fsm.New()
	b := NewBook()
	f.SetMachineObserver(b.Observe)
	next := uint64(1)
	steps := []struct {
		name string
		cmds []cmd
	}{
		{"joins", []cmd{joinAt("c", "10.0.0.3:1", ""), joinAt("a", "10.0.0.1:1", "desk"), joinAt("b", "10.0.0.2:1", "")}},
		{"a database", []cmd{{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, Database: db}}}},
		{"health and owner", []cmd{
			{fsm.MachineHealthType, fsm.MachineHealth{At: at, Machine: "a", Problem: "disk full"}},
			{fsm.MachineAsleepType, fsm.MachineAsleep{At: at, Machine: "b", Reason: "console login"}},
		}},
		{"an expiry", []cmd{{fsm.LeaseExpiredType, fsm.LeaseExpired{At: at, Machine: "c"}}}},
		{"new joins batched with a restore", []cmd{
			joinAt("z", "10.0.0.9:1", ""), joinAt("d", "10.0.0.4:1", ""), joinAt("e", "10.0.0.5:1", ""),
			{fsm.LeaseRestoredType, fsm.LeaseRestored{At: at, Machine: "c"}},
		}},
		{"a restart and a leave", []cmd{
			{fsm.StubRestartingType, fsm.StubRestarting{At: at, Machine: "b"}},
			{fsm.StubLeaveType, fsm.StubLeave{At: at, Machine: "a", Reason: "failed"}},
		}},
		{"a rejoin at a new address", []cmd{joinAt("a", "10.0.0.11:1", "")}},
		{"a database declaring fewer", []cmd{{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, Database: fsm.Database{}}}}},
	}
	for _, s := range steps {
		next = applyTo(t, f, next, s.cmds...)
		checkBook(t, b, f, "after "+s.name)
	}
	if e, _ := b.Machine("a"); e.Addr != "10.0.0.11:1" || e.Position != 2 {
		t.Errorf("a after its rejoin: %+v, want address 10.0.0.11:1 at position 2", e)
	}

	// A replica that restores a snapshot: the FSM builds a fresh state,
	// and the book takes it whole at the next entry.
	var buf bytes.Buffer
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&fileSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := fsm.New()
	gb := NewBook()
	g.SetMachineObserver(gb.Observe)
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	applyTo(t, g, next, joinAt("y", "10.0.0.25:1", ""))
	checkBook(t, gb, g, "after a restore and one entry")
	if gb.Size() != 7 {
		t.Errorf("restored book holds %d machines, want 7", gb.Size())
	}
}

// TestBookPoolPrefixStable checks that a join order handed out before
// more machines joined keeps its size and positions: the outage rule
// counts on a reader's prefix not changing under it.
func TestBookPoolPrefixStable(t *testing.T) {
	f := fsm.New()
	b := NewBook()
	f.SetMachineObserver(b.Observe)
	next := applyTo(t, f, 1, cmd{fsm.StubJoinType, fsm.StubJoin{Machine: fsm.MachineFacts{Name: "m1", Arch: "amd64"}}})
	early := b.Pool()
	var more []cmd
	for i := 2; i <= 20; i++ {
		more = append(more, cmd{fsm.StubJoinType, fsm.StubJoin{Machine: fsm.MachineFacts{Name: fmt.Sprintf("m%d", i), Arch: "amd64"}}})
	}
	applyTo(t, f, next, more...)
	if early.Size() != 1 || early.Position("m1") != 1 || early.Position("m20") != 0 {
		t.Errorf("early order: size %d, m1 at %d, m20 at %d; want 1, 1, 0", early.Size(), early.Position("m1"), early.Position("m20"))
	}
	if late := b.Pool(); late.Size() != 20 || late.Position("m20") != 20 {
		t.Errorf("late order: size %d, m20 at %d; want 20, 20", late.Size(), late.Position("m20"))
	}
}

// fileSink is a raft.SnapshotSink into a buffer.
type fileSink struct{ *bytes.Buffer }

func (s *fileSink) ID() string    { return "test" }
func (s *fileSink) Cancel() error { return nil }
func (s *fileSink) Close() error  { return nil }
