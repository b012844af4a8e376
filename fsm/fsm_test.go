package fsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// applyPanics reports whether applying data panics, and the panic value.
func applyPanics(f *fsm.FSM, index uint64, data []byte) (panicked bool, value any) {
	defer func() {
		if value = recover(); value != nil {
			panicked = true
		}
	}()
	f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data})
	return false, nil
}

func TestApplyPanics(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty entry", nil},
		{"unknown type", append([]byte{byte(fsm.CommandLevel) + 1}, "{}"...)},
		{"zero type", append([]byte{0}, "{}"...)},
		{"corrupt StubJoin body", append([]byte{byte(fsm.StubJoinType)}, "{"...)},
		{"corrupt Submit body", append([]byte{byte(fsm.SubmitType)}, `{"spec":{"min":"three"}}`...)},
		{"corrupt Place body", append([]byte{byte(fsm.PlaceType)}, "not json"...)},
		{"corrupt Kill body", []byte{byte(fsm.KillType)}},
		{"ChildEvents event with neither event", append([]byte{byte(fsm.ChildEventsType)},
			`{"events":[{"register":{"job_id":1,"instance":0,"attempt":1,"machine":"m1","pid":7}},{}]}`...)},
		{"ChildEvents event with both events", append([]byte{byte(fsm.ChildEventsType)},
			`{"events":[{"register":{"job_id":1},"term":{"job_id":1}}]}`...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 1)
			before := snapshotBytes(t, a.f)
			panicked, v := applyPanics(a.f, 2, tc.data)
			if !panicked {
				t.Fatalf("got no panic, want one")
			}
			if s := fmt.Sprint(v); !bytes.Contains([]byte(s), []byte("index 2")) {
				t.Errorf("got panic %q, want it to name index 2", s)
			}
			// The replica stops; the lock must not be left held.
			if after := snapshotBytes(t, a.f); !bytes.Equal(after, before) {
				t.Errorf("state changed by a panicking entry:\nbefore: %s\nafter:  %s", before, after)
			}
		})
	}
}

func TestApplyIgnoreUnknown(t *testing.T) {
	for _, typ := range []fsm.MessageType{100, 127} {
		t.Run(fmt.Sprintf("type %d", uint8(typ|fsm.IgnoreUnknownFlag)), func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 1)
			before := stateBytes(t, a.f)
			res := a.raw(append([]byte{byte(typ | fsm.IgnoreUnknownFlag)}, `{"whatever":1}`...))
			wantErr(t, res.Err, nil)
			if res.Index != 2 {
				t.Errorf("got Result.Index %d, want 2", res.Index)
			}
			assertUnchanged(t, a.f, before)
			var idx uint64
			a.f.Read(func(v fsm.View) { idx = v.Index() })
			if idx != 2 {
				t.Errorf("got View.Index %d, want 2", idx)
			}
		})
	}
}

// The flag only says "skip me if you do not know me": a server that knows
// the type underneath must apply it (as nomad's FSM does, and as
// MessageType.String, which strips the flag, implies).
func TestApplyKnownTypeWithIgnoreFlag(t *testing.T) {
	a := newApplier(t)
	res := a.apply(fsm.SubmitType|fsm.IgnoreUnknownFlag, fsm.Submit{At: at(1), Owner: "alice", Spec: spec("j", 1)})
	wantErr(t, res.Err, nil)
	if res.JobID != 1 {
		t.Errorf("got JobID %d, want 1", res.JobID)
	}
	var n int
	a.f.Read(func(v fsm.View) { n = len(v.Jobs()) })
	if n != 1 {
		t.Errorf("got %d jobs, want 1", n)
	}
}

func TestApplyNonCommandLog(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 1)
	before := snapshotBytes(t, a.f)
	_, watch := a.f.Watch()
	out := a.f.Apply(&raft.Log{Type: raft.LogNoop, Index: 2})
	res, ok := out.(*fsm.Result)
	if !ok || res.Index != 2 || res.Err != nil {
		t.Errorf("got %#v, want &Result{Index: 2}", out)
	}
	if after := snapshotBytes(t, a.f); !bytes.Equal(after, before) {
		t.Errorf("state changed:\nbefore: %s\nafter:  %s", before, after)
	}
	select {
	case <-watch:
		t.Errorf("watch closed by a non-command entry")
	default:
	}
}

// TestApplyBatch applies a batch with a configuration entry inside: every
// entry gets a result, the commands change the state as Apply would, the
// applied index is the batch's last and the watch closes once.
func TestApplyBatch(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	one := newApplier(t)
	one.join("m1", "x86_64", 2)
	_, watch := a.f.Watch()
	res := a.batch([][]byte{
		encode(t, command{fsm.SubmitType, fsm.Submit{At: at(1), Owner: "u", Spec: spec("a", 1)}}),
		encode(t, command{fsm.SubmitType, fsm.Submit{At: at(2), Owner: "u", Spec: spec("b", 1)}}),
	}, true)
	if len(res) != 2 || res[0].JobID != 1 || res[1].JobID != 2 || res[0].Index != 2 || res[1].Index != 4 {
		t.Fatalf("got results %+v, want jobs 1 and 2 at indexes 2 and 4", res)
	}
	select {
	case <-watch:
	default:
		t.Fatalf("watch not closed by ApplyBatch")
	}
	var idx uint64
	a.f.Read(func(v fsm.View) { idx = v.Index() })
	if idx != 4 {
		t.Errorf("applied index %d, want 4", idx)
	}
	// The same commands one by one, at the same indexes, give the same state.
	one.raw(encode(t, command{fsm.SubmitType, fsm.Submit{At: at(1), Owner: "u", Spec: spec("a", 1)}}))
	one.f.Apply(&raft.Log{Type: raft.LogConfiguration, Index: 3})
	one.next++
	one.raw(encode(t, command{fsm.SubmitType, fsm.Submit{At: at(2), Owner: "u", Spec: spec("b", 1)}}))
	if got, want := snapshotBytes(t, a.f), snapshotBytes(t, one.f); !bytes.Equal(got, want) {
		t.Errorf("batched state differs from one by one:\nbatched: %s\none:     %s", got, want)
	}
}

func TestWatch(t *testing.T) {
	a := newApplier(t)
	idx, ch := a.f.Watch()
	if idx != 0 {
		t.Errorf("got index %d, want 0", idx)
	}
	select {
	case <-ch:
		t.Fatalf("watch closed before any change")
	default:
	}
	a.join("m1", "x86_64", 1)
	select {
	case <-ch:
	default:
		t.Fatalf("watch not closed by Apply")
	}
	idx, ch2 := a.f.Watch()
	if idx != 1 {
		t.Errorf("got index %d, want 1", idx)
	}
	select {
	case <-ch2:
		t.Fatalf("new watch already closed")
	default:
	}
	// A rejected command is still an applied entry.
	a.apply(fsm.KillType, fsm.Kill{At: at(1), JobID: 7})
	select {
	case <-ch2:
	default:
		t.Fatalf("watch not closed by a rejected command")
	}

	_, ch3 := a.f.Watch()
	if err := restoreInto(a.f, snapshotBytes(t, newApplier(t).f)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	select {
	case <-ch3:
	default:
		t.Fatalf("watch not closed by Restore")
	}
}

// TestWatchWakesWaiter is the intended use: a reader blocks on the channel
// in another goroutine while Apply runs.
func TestWatchWakesWaiter(t *testing.T) {
	a := newApplier(t)
	_, ch := a.f.Watch()
	woke := make(chan uint64)
	go func() {
		<-ch
		var idx uint64
		a.f.Read(func(v fsm.View) { idx = v.Index() })
		woke <- idx
	}()
	a.join("m1", "x86_64", 1)
	if got := <-woke; got != 1 {
		t.Errorf("got index %d after wake, want 1", got)
	}
}

func TestConcurrentReadAndApply(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 64)
	id := a.submit("j", 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 64 {
			a.f.Read(func(v fsm.View) {
				for _, r := range v.Active() {
					if _, in, ok := v.Instance(r); !ok || !in.Active() {
						t.Errorf("read %d: active ref %v is not active", i, r)
					}
				}
				_ = v.Running("m1")
			})
		}
	}()
	for i := range 64 {
		a.place(asg(id, i, "m1"))
	}
	<-done
}

func TestMessageTypeString(t *testing.T) {
	tests := []struct {
		typ  fsm.MessageType
		want string
	}{
		{fsm.StubJoinType, "StubJoin"},
		{fsm.StubLeaveType, "StubLeave"},
		{fsm.SubmitType, "Submit"},
		{fsm.PlaceType, "Place"},
		{fsm.ChildRegisterType, "ChildRegister"},
		{fsm.ChildTermType, "ChildTerm"},
		{fsm.KillType, "Kill"},
		{fsm.LoadDatabaseType, "LoadDatabase"},
		{fsm.SetQueueType, "SetQueue"},
		{fsm.RemoveQueueType, "RemoveQueue"},
		{fsm.ReserveType, "Reserve"},
		{fsm.UnreserveType, "Unreserve"},
		{fsm.SuspendType, "Suspend"},
		{fsm.ResumeType, "Resume"},
		{fsm.RestartJobType, "RestartJob"},
		{fsm.LeaseExpiredType, "LeaseExpired"},
		{fsm.LeaseRestoredType, "LeaseRestored"},
		{fsm.LeaderElectedType, "LeaderElected"},
		{fsm.ChildEventsType, "ChildEvents"},
		{fsm.SubmitPlaceType, "SubmitPlace"},
		{fsm.SubmitsType, "Submits"},
		{fsm.SessionEventType | fsm.IgnoreUnknownFlag, "SessionEvent"},
		{fsm.PolicyLoadType, "PolicyLoad"},
		{fsm.KillType | fsm.IgnoreUnknownFlag, "Kill"},
		{99, "MessageType(99)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.typ.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	data, err := fsm.Encode(fsm.KillType, fsm.Kill{JobID: 3, By: "bob"})
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if data[0] != byte(fsm.KillType) {
		t.Errorf("got type byte %d, want %d", data[0], fsm.KillType)
	}
	if want := `{"at":"0001-01-01T00:00:00Z","job_id":3,"by":"bob"}`; string(data[1:]) != want {
		t.Errorf("got body %s, want %s", data[1:], want)
	}
	if _, err := fsm.Encode(fsm.KillType, make(chan int)); err == nil {
		t.Errorf("encode of a channel: got nil error, want one")
	}
}
