package fsm_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// primeDB declares queue debug: priority 5, nq_maxactive 1 and
// nq_maxuser_queued 1 outside its window; priority 20, no nq_maxactive
// and nq_maxuser_queued 3 inside it.
func primeDB() fsm.Database {
	prio, active, queued := 20, int64(0), int64(3)
	return fsm.Database{Queues: []fsm.DeclaredQueue{{
		Name: "debug", Priority: 5, MaxActive: 1, MaxUserQueued: 1,
		Prime: &fsm.DeclaredPrime{Windows: []string{"Mon-Fri 08:00-18:00"}, TZ: "Europe/Paris",
			Priority: &prio, MaxActive: &active, MaxUserQueued: &queued},
	}}}
}

// primeSwitch is a switch of queue debug scheduled at at(n).
func primeSwitch(open bool, n int) fsm.PrimeTimeSwitch {
	return fsm.PrimeTimeSwitch{At: at(n + 1), Queue: "debug", Open: open, Scheduled: at(n)}
}

// queueView reads queue name.
func (a *applier) queueView(name string) fsm.QueueView {
	a.tb.Helper()
	var qv fsm.QueueView
	var ok bool
	a.f.Read(func(v fsm.View) { qv, ok = v.Queue(name) })
	if !ok {
		a.tb.Fatalf("queue %s not found", name)
	}
	return qv
}

// TestPrimeTimeSwitch checks what a switch decides: the values in force
// change with it, the declaration does not, and a repeat, a switch to the
// state in force, or one scheduled at or before the last, changes
// nothing (Stale).
func TestPrimeTimeSwitch(t *testing.T) {
	a := newApplier(t)
	a.load(primeDB())
	if qv := a.queueView("debug"); qv.PrimeState.Open || qv.Priority != 5 || qv.MaxActive != 1 {
		t.Fatalf("before any switch: got open %v priority %d max active %d, want closed, 5, 1", qv.PrimeState.Open, qv.Priority, qv.MaxActive)
	}
	res := a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 100))
	if res.Stale {
		t.Fatalf("first open: got Stale, want applied")
	}
	qv := a.queueView("debug")
	if !qv.PrimeState.Open || !qv.PrimeState.At.Equal(at(100)) || qv.PrimeState.Index != res.Index {
		t.Errorf("got state %+v, want open at %v index %d", qv.Prime, at(100), res.Index)
	}
	if qv.Priority != 20 || qv.MaxActive != 0 || qv.MaxUserQueued != 3 || qv.MaxUserActive != 0 {
		t.Errorf("in force: got priority %d max active %d max user queued %d, want 20, 0, 3", qv.Priority, qv.MaxActive, qv.MaxUserQueued)
	}
	if qv.Declared.Priority != 5 || qv.Declared.MaxActive != 1 {
		t.Errorf("declared: got priority %d max active %d, want 5 and 1", qv.Declared.Priority, qv.Declared.MaxActive)
	}
	before := stateBytes(t, a.f)
	for _, tc := range []struct {
		name string
		sw   fsm.PrimeTimeSwitch
	}{
		{"the same switch again", primeSwitch(true, 100)},
		{"open again later", primeSwitch(true, 200)},
		{"closed at the same instant", primeSwitch(false, 100)},
		{"closed earlier", primeSwitch(false, 99)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := a.mustOK(fsm.PrimeTimeSwitchType, tc.sw); !res.Stale {
				t.Errorf("got applied, want Stale")
			}
			assertUnchanged(t, a.f, before)
		})
	}
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(false, 101))
	if qv := a.queueView("debug"); qv.PrimeState.Open || qv.Priority != 5 || qv.MaxActive != 1 {
		t.Errorf("after close: got open %v priority %d max active %d, want closed, 5, 1", qv.PrimeState.Open, qv.Priority, qv.MaxActive)
	}
	if res := a.apply(fsm.PrimeTimeSwitchType, fsm.PrimeTimeSwitch{At: at(300), Queue: "nope", Open: true, Scheduled: at(300)}); !errors.Is(res.Err, fsm.ErrNoSuchQueue) {
		t.Errorf("switch of an unknown queue: got %v, want ErrNoSuchQueue", res.Err)
	}
}

// TestPrimeTimeLimitsInForce checks that submit and place check the
// values in force: nq_maxuser_queued and nq_maxactive follow the window.
func TestPrimeTimeLimitsInForce(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.load(primeDB())
	submit := func() *fsm.Result {
		s := spec("dbg", 1)
		s.Queue = "debug"
		return a.apply(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s})
	}
	first := submit()
	if first.Err != nil {
		t.Fatalf("first submit: %v", first.Err)
	}
	if res := submit(); !errors.Is(res.Err, queue.ErrUserQueueFull) {
		t.Fatalf("second submit outside prime time: got %v, want ErrUserQueueFull", res.Err)
	}
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 100))
	second := submit()
	if second.Err != nil {
		t.Fatalf("second submit in prime time: got %v, want accepted (nq_maxuser_queued 3)", second.Err)
	}
	// Both placed at once: prime time lifts nq_maxactive.
	res := a.place(asg(first.JobID, 0, "m1"), asg(second.JobID, 0, "m1"))
	if res.Dropped != 0 || a.running("m1") != 2 {
		t.Fatalf("placed in prime time: got %d running, dropped %v, want 2 and none", a.running("m1"), res.Dropped)
	}
	// Closed again: a third job is refused (alice holds 2 > 1), and the
	// two running stay.
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(false, 200))
	if res := submit(); !errors.Is(res.Err, queue.ErrUserQueueFull) {
		t.Errorf("third submit after prime time: got %v, want ErrUserQueueFull", res.Err)
	}
	if a.running("m1") != 2 {
		t.Errorf("after the window closed: got %d running, want 2 (nothing is stopped)", a.running("m1"))
	}
}

// TestPrimeTimeAfterLoad checks what a database load does to the states:
// the same window keeps its state and instant, a changed window keeps
// whether it is open but forgets the instant (so an earlier edge of the
// new window may switch it), and a queue without a window loses it.
func TestPrimeTimeAfterLoad(t *testing.T) {
	a := newApplier(t)
	a.load(primeDB())
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 100))
	a.load(primeDB())
	if st := a.queueView("debug").PrimeState; !st.Open || !st.At.Equal(at(100)) {
		t.Errorf("same window reloaded: got %+v, want open at %v", st, at(100))
	}
	changed := primeDB()
	changed.Queues[0].Prime.Windows = []string{"Mon-Fri 09:00-17:00"}
	a.load(changed)
	if st := a.queueView("debug").PrimeState; !st.Open || !st.At.IsZero() {
		t.Errorf("window changed: got %+v, want open with no instant", st)
	}
	if res := a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(false, 50)); res.Stale {
		t.Errorf("a close at an edge before the old switch, after the window changed: got Stale, want applied")
	}
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 60))
	none := primeDB()
	none.Queues[0].Prime = nil
	a.load(none)
	if qv := a.queueView("debug"); qv.PrimeState != (fsm.PrimeState{}) || qv.Priority != 5 {
		t.Errorf("window removed: got state %+v priority %d, want none and 5", qv.Prime, qv.Priority)
	}
	if res := a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 300)); !res.Stale {
		t.Errorf("switch of a queue without a window: got applied, want Stale")
	}
}

// TestPrimeTimeSetQueueKeepsWindow checks that a queue set at run time
// with its prime time kept (as the server does) keeps its state, and that
// removing the queue forgets it.
func TestPrimeTimeSetQueueKeepsWindow(t *testing.T) {
	a := newApplier(t)
	a.load(primeDB())
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 100))
	q := primeDB().Queues[0]
	q.Priority = 7
	a.mustOK(fsm.SetQueueType, fsm.SetQueue{At: at(101), By: "tclark", Queue: q})
	if qv := a.queueView("debug"); !qv.PrimeState.Open || qv.Priority != 20 || qv.Declared.Priority != 7 {
		t.Errorf("after set: got open %v priority %d declared %d, want open, 20, 7", qv.PrimeState.Open, qv.Priority, qv.Declared.Priority)
	}
	a.mustOK(fsm.RemoveQueueType, fsm.RemoveQueue{At: at(102), By: "tclark", Name: "debug"})
	a.mustOK(fsm.SetQueueType, fsm.SetQueue{At: at(103), By: "tclark", Queue: primeDB().Queues[0]})
	if st := a.queueView("debug").PrimeState; st != (fsm.PrimeState{}) {
		t.Errorf("removed and declared again: got %+v, want closed", st)
	}
}

// TestPrimeTimeSnapshot checks that the states survive a snapshot and
// restore, byte for byte, and that two replicas applying the same entries
// agree.
func TestPrimeTimeSnapshot(t *testing.T) {
	build := func() *applier {
		a := newApplier(t)
		a.load(primeDB())
		a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 100))
		a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(true, 100)) // stale
		return a
	}
	a, b := build(), build()
	snap := snapshotBytes(t, a.f)
	if other := snapshotBytes(t, b.f); !bytes.Equal(snap, other) {
		t.Fatalf("two replicas differ:\n%s\n%s", snap, other)
	}
	r := restored(t, snap)
	if again := snapshotBytes(t, r); !bytes.Equal(again, snap) {
		t.Errorf("restored state snapshots differently:\n%s\nwant\n%s", again, snap)
	}
	var st fsm.PrimeState
	r.Read(func(v fsm.View) { st = v.PrimeState("debug") })
	if !st.Open || !st.At.Equal(at(100)) {
		t.Errorf("restored state: got %+v, want open at %v", st, at(100))
	}
	// The restored replica goes on as the original.
	rb := &applier{tb: t, f: r, next: a.next}
	a.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(false, 200))
	rb.mustOK(fsm.PrimeTimeSwitchType, primeSwitch(false, 200))
	if x, y := snapshotBytes(t, a.f), snapshotBytes(t, rb.f); !bytes.Equal(x, y) {
		t.Errorf("after one more switch the restored replica differs")
	}
}
