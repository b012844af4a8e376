package fsm_test

import (
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// TestPlaceQueueMaxActive: a Place re-checks its queue's nq_maxactive for
// each assignment in turn, inside one Place and across Places, counting
// placed, running and suspended instances, and under limits lowered or
// lifted at run time.
func TestPlaceQueueMaxActive(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	a.join("m2", "x86_64", 8)
	a.setQueue(fsm.DeclaredQueue{Name: "q", MaxActive: 2})
	jobA := a.mustQueueJob("alice", "q", 4, 0)
	jobB := a.mustQueueJob("alice", "", 2, 0)
	jobC := a.mustQueueJob("bob", "q", 2, 0)
	var dup []byte
	steps := []struct {
		name       string
		do         func() *fsm.Result
		want       []fsm.Assignment
		wantActive int
	}{
		{"one Place beyond the limit", func() *fsm.Result {
			return a.place(asg(jobA, 0, "m1"), asg(jobA, 1, "m2"), asg(jobA, 2, "m1"), asg(jobB, 0, "m1"), asg(jobC, 0, "m2"))
		}, []fsm.Assignment{asg(jobA, 0, "m1"), asg(jobA, 1, "m2"), asg(jobB, 0, "m1")}, 2},
		{"a later Place", func() *fsm.Result { return a.place(asg(jobC, 0, "m1")) }, nil, 2},
		{"suspended instances count", func() *fsm.Result {
			a.register(jobA, 0, "m1", 10)
			a.control(fsm.SuspendType, jobA)
			return a.place(asg(jobC, 0, "m1"))
		}, nil, 2},
		{"an end makes room for one", func() *fsm.Result {
			a.register(jobA, 1, "m2", 11)
			a.term(jobA, 1, "m2", 0)
			data := encode(t, command{fsm.PlaceType, fsm.Place{At: at(2), Assignments: []fsm.Assignment{asg(jobC, 0, "m2"), asg(jobC, 1, "m2")}}})
			dup = data
			return a.raw(data)
		}, []fsm.Assignment{asg(jobC, 0, "m2")}, 2},
		{"the same Place duplicated", func() *fsm.Result { return a.raw(dup) }, nil, 2},
		{"restart requested still counts", func() *fsm.Result {
			a.control(fsm.RestartJobType, jobC)
			return a.place(asg(jobC, 1, "m1"))
		}, nil, 2},
		{"lowered under running work", func() *fsm.Result {
			a.setQueue(fsm.DeclaredQueue{Name: "q", MaxActive: 1})
			a.termWith(jobC, 0, 1, "m2", fsm.ChildTerm{ExitCode: -1, Signal: "TERM"}) // restarted: attempt 2 queued
			return a.place(asg(jobA, 2, "m1"), asg(jobC, 1, "m1"))
		}, nil, 1},
		{"room again under the lowered limit", func() *fsm.Result {
			a.control(fsm.ResumeType, jobA)
			a.term(jobA, 0, "m1", 0)
			return a.place(asg(jobA, 2, "m1"), asg(jobA, 3, "m1"), asg(jobC, 1, "m2"))
		}, []fsm.Assignment{asg(jobA, 2, "m1")}, 1},
		{"limit lifted", func() *fsm.Result {
			a.setQueue(fsm.DeclaredQueue{Name: "q"})
			return a.place(asg(jobA, 3, "m1"), asg(jobC, 1, "m2"), fsm.Assignment{JobID: jobC, Instance: 0, Attempt: 2, Machine: "m2", Key: fsm.AnyKey})
		}, []fsm.Assignment{asg(jobA, 3, "m1"), asg(jobC, 1, "m2"), {JobID: jobC, Instance: 0, Attempt: 2, Machine: "m2", Key: fsm.AnyKey}}, 4},
		{"the default queue's own limit", func() *fsm.Result {
			a.setQueue(fsm.DeclaredQueue{Name: fsm.DefaultQueue, MaxActive: 1})
			return a.place(asg(jobB, 1, "m2"))
		}, nil, 4},
	}
	for _, st := range steps {
		res := st.do()
		if res.Err != nil || !slices.Equal(res.Accepted, st.want) {
			t.Errorf("%s: got Err %v Accepted %v, want nil and %v", st.name, res.Err, res.Accepted, st.want)
		}
		if got := a.queueCounts("q").active; got != st.wantActive {
			t.Errorf("%s: got q active %d, want %d", st.name, got, st.wantActive)
		}
	}
	if got, want := a.queueCounts(fsm.DefaultQueue), (qc{1, 1, 1}); got != want {
		t.Errorf("default queue: got %+v, want %+v", got, want)
	}
}

// TestPlaceQueueAndReservation: both re-checks apply to one assignment;
// an instance dropped for one is not placed by the other passing.
func TestPlaceQueueAndReservation(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	a.join("m2", "x86_64", 8)
	a.setQueue(fsm.DeclaredQueue{Name: "q", MaxActive: 1})
	a.mustReserve("bob", at(0), at(100), "m1")
	bob := a.mustQueueJob("bob", "q", 3, 0)
	ann := a.mustQueueJob("ann", "q", 1, 0)
	res := a.placeAt(at(50), asg(ann, 0, "m1"), asg(bob, 0, "m1"), asg(bob, 1, "m2"))
	if want := []fsm.Assignment{asg(bob, 0, "m1")}; !slices.Equal(res.Accepted, want) || res.Dropped != 2 {
		t.Errorf("got Accepted %v Dropped %d, want %v and 2", res.Accepted, res.Dropped, want)
	}
	a.term(bob, 0, "m1", 0)
	res = a.placeAt(at(50), asg(ann, 0, "m1"), asg(ann, 0, "m2"), asg(bob, 1, "m2"))
	if want := []fsm.Assignment{asg(ann, 0, "m2")}; !slices.Equal(res.Accepted, want) || res.Dropped != 2 {
		t.Errorf("got Accepted %v Dropped %d, want %v and 2", res.Accepted, res.Dropped, want)
	}
}
