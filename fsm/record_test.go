package fsm_test

import (
	"reflect"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// recording starts an applier whose FSM hands what it produces to the
// returned slice.
func recording(tb testing.TB) (*applier, *[]fsm.Applied) {
	a := newApplier(tb)
	var got []fsm.Applied
	a.f.SetRecorder(func(out []fsm.Applied) { got = append(got, out...) })
	return a, &got
}

func attemptsOf(got []fsm.Applied) []fsm.AttemptRecord {
	var out []fsm.AttemptRecord
	for _, ap := range got {
		out = append(out, ap.Attempts...)
	}
	return out
}

func TestRecorderEveryAttempt(t *testing.T) {
	a, got := recording(t)
	a.join("m1", "x86_64", 2)
	s := spec("r", 1)
	s.Restart = fsm.RestartOnFailure
	id := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 42)
	a.apply(fsm.ChildTermType, fsm.ChildTerm{At: at(4), JobID: id, Instance: 0, Attempt: 1, Machine: "m1",
		ExitCode: 3, UserMS: 120, SysMS: 30, MaxRSSKB: 2048})
	failedAt := a.next - 1
	a.mustOK(fsm.PlaceType, fsm.Place{At: at(10), PlannedAtIndex: a.next - 1, Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 2, Machine: "m1", Key: "*"}}})
	a.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at(11), JobID: id, Instance: 0, Attempt: 2, Machine: "m1", PID: 43})
	a.apply(fsm.ChildTermType, fsm.ChildTerm{At: at(12), JobID: id, Instance: 0, Attempt: 2, Machine: "m1"})

	as := attemptsOf(*got)
	if len(as) != 2 {
		t.Fatalf("recorded %d attempts, want 2: %+v", len(as), as)
	}
	first, second := as[0], as[1]
	if first.Attempt != 1 || first.State != fsm.InstanceFailed || first.ExitCode != 3 || first.ReplacedBy != 2 ||
		first.Index != failedAt || first.Owner != "alice" || first.Machine != "m1" || first.UserMS != 120 ||
		first.SysMS != 30 || first.MaxRSSKB != 2048 || !first.StartedAt.Equal(at(3)) || !first.EndedAt.Equal(at(4)) ||
		!first.PlacedAt.Equal(at(2)) {
		t.Errorf("first attempt = %+v, want attempt 1 failed(3) on m1 by alice at index %d, replaced by 2, with its usage and times", first, failedAt)
	}
	if second.Attempt != 2 || second.State != fsm.InstanceExited || second.ReplacedBy != 0 || !second.EndedAt.Equal(at(12)) {
		t.Errorf("second attempt = %+v, want attempt 2 exited at %v, replaced by none", second, at(12))
	}

	// The events handed out are the ones the ring holds, in order, and the
	// last Applied names the last entry applied.
	var evs []fsm.Event
	for _, ap := range *got {
		evs = append(evs, ap.Events...)
	}
	if want := a.events(0); !reflect.DeepEqual(evs, want) {
		t.Errorf("recorded events %v, want the ring's %v", kinds(evs), kinds(want))
	}
	if last := (*got)[len(*got)-1]; last.Index != a.next-1 {
		t.Errorf("last recorded index %d, want %d", last.Index, a.next-1)
	}
}

func TestRecorderDeterministic(t *testing.T) {
	run := func(batch bool) []fsm.Applied {
		a, got := recording(t)
		a.join("m1", "x86_64", 2)
		id := a.submit("j", 2)
		a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
		if batch {
			a.batch([][]byte{
				encode(t, command{fsm.ChildRegisterType, fsm.ChildRegister{At: at(3), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", PID: 1}}),
				encode(t, command{fsm.ChildTermType, fsm.ChildTerm{At: at(4), JobID: id, Instance: 0, Attempt: 1, Machine: "m1"}}),
				encode(t, command{fsm.StubLeaveType, fsm.StubLeave{At: at(50), Machine: "m1", Reason: "gone"}}),
			}, true)
		} else {
			a.register(id, 0, "m1", 1)
			a.term(id, 0, "m1", 0)
			a.leave("m1", "gone")
		}
		var out []fsm.Applied
		for _, ap := range *got {
			if len(ap.Events) > 0 || len(ap.Attempts) > 0 {
				ap.Index = 0 // a batch has a configuration entry in the middle
				for i := range ap.Events {
					ap.Events[i].Index = 0
				}
				for i := range ap.Attempts {
					ap.Attempts[i].Index = 0
				}
				out = append(out, ap)
			}
		}
		return out
	}
	one, batched := run(false), run(true)
	if !reflect.DeepEqual(one, batched) {
		t.Errorf("Apply one by one recorded\n%+v\nApplyBatch recorded\n%+v", one, batched)
	}
	as := attemptsOf(one)
	if len(as) != 2 || as[0].State != fsm.InstanceExited || as[1].State != fsm.InstanceLost || as[1].Instance != 1 {
		t.Errorf("attempts = %+v, want instance 0 exited, instance 1 lost", as)
	}
}

func TestRecorderRestore(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.submit("j", 1)
	data := snapshotBytes(t, a.f)

	b, got := recording(t)
	if err := restoreInto(b.f, data); err != nil {
		t.Fatal(err)
	}
	if want := []fsm.Applied{{Index: a.next - 1, Restored: true}}; !reflect.DeepEqual(*got, want) {
		t.Errorf("restore recorded %+v, want %+v", *got, want)
	}
	// Recording goes on after the restore.
	b.next = a.next
	b.place(asg(1, 0, "m1"))
	if n := len(*got); n != 2 || len((*got)[1].Events) != 1 {
		t.Errorf("after restore recorded %+v, want the placement's event", *got)
	}
}

// TestRecorderLeavesStateAlone applies the same entries with and without
// a recorder: the snapshots are the same bytes.
func TestRecorderLeavesStateAlone(t *testing.T) {
	run := func(a *applier) []byte {
		a.join("m1", "x86_64", 2)
		s := spec("r", 2)
		s.Restart = fsm.RestartOnFailure
		id := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
		a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
		a.register(id, 0, "m1", 42)
		a.term(id, 0, "m1", 3)
		a.leave("m1", "gone")
		return snapshotBytes(t, a.f)
	}
	rec, _ := recording(t)
	if with, without := run(rec), run(newApplier(t)); string(with) != string(without) {
		t.Errorf("a recorder changed the snapshot:\nwith    %s\nwithout %s", with, without)
	}
}
