package planner_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

var at = time.Date(2025, time.March, 3, 8, 0, 0, 0, time.UTC)

// newState returns an FSM holding two machines, a (x86_64, 2 CPUs) and b
// (sparc, 1 CPU), and a function that applies commands to it.
func newState(t *testing.T) (*fsm.FSM, func(fsm.MessageType, any)) {
	t.Helper()
	f := fsm.New()
	applyRes := applier(t, f)
	apply := func(typ fsm.MessageType, body any) { t.Helper(); applyRes(typ, body) }
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "a", Arch: "x86_64", CPUs: 2, MemoryMB: 1024}})
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "b", Arch: "sparc", CPUs: 1, MemoryMB: 1024}})
	return f, apply
}

// applier returns a function that applies one command to f at the next
// index after f's own, failing the test or benchmark when it cannot be
// encoded or is refused.
func applier(t testing.TB, f *fsm.FSM) func(fsm.MessageType, any) *fsm.Result {
	var index uint64
	f.Read(func(v fsm.View) { index = v.Index() })
	return func(typ fsm.MessageType, body any) *fsm.Result {
		t.Helper()
		data, err := fsm.Encode(typ, body)
		if err != nil {
			t.Fatal(err)
		}
		index++
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(*fsm.Result)
		if res.Err != nil {
			t.Fatalf("apply %v: %v", typ, res.Err)
		}
		return res
	}
}

// allUp is the liveness of every machine of v with its stub up, no load.
func allUp(v fsm.View) map[string]planner.Liveness {
	live := make(map[string]planner.Liveness)
	for _, m := range v.Machines() {
		live[m.Name] = planner.Liveness{Up: true}
	}
	return live
}

// TestPlace: a pass places what fits where it fits and leaves the rest
// queued, and the same view, liveness and time give the same Place.
func TestPlace(t *testing.T) {
	f, apply := newState(t)
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"x86_64": "/bin/x"}, Min: 3}})
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"sparc": "/bin/s"}, Min: 1}})

	var got, again fsm.Place
	now := at.Add(time.Minute)
	f.Read(func(v fsm.View) {
		got = planner.New(v, allUp(v), now).Place()
		again = planner.New(v, allUp(v), now).Place()
	})
	want := map[string]int{"a": 2, "b": 1}
	for _, a := range got.Assignments {
		want[a.Machine]--
		if (a.Machine == "a") != (a.JobID == 1) || a.Attempt != 1 {
			t.Errorf("got assignment %+v, want job 1 on a and job 2 on b, attempt 1", a)
		}
	}
	if len(got.Assignments) != 3 || want["a"] != 0 || want["b"] != 0 {
		t.Errorf("got %d assignments %+v, want 2 on a (its slots) and 1 on b", len(got.Assignments), got.Assignments)
	}
	if got.PlannedAtIndex != 4 {
		t.Errorf("got PlannedAtIndex %d, want 4 (the view's index)", got.PlannedAtIndex)
	}
	if !reflect.DeepEqual(got, again) {
		t.Errorf("two passes over the same view differ:\n%+v\n%+v", got, again)
	}
}

// TestPlaceDown: a machine whose stub is not up takes nothing.
func TestPlaceDown(t *testing.T) {
	f, apply := newState(t)
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"x86_64": "/bin/x"}, Min: 1}})
	var got fsm.Place
	f.Read(func(v fsm.View) {
		got = planner.New(v, map[string]planner.Liveness{"b": {Up: true}}, at).Place()
	})
	if len(got.Assignments) != 0 {
		t.Errorf("got assignments %+v with a down, want none", got.Assignments)
	}
}

// TestPlaceSubmit: a job submitted while nothing waits is planned as far
// as capacity goes; behind a waiting job, or when the caller may not
// place it, it is left to the scheduler, and it is not unrunnable.
func TestPlaceSubmit(t *testing.T) {
	f, apply := newState(t)
	sub := fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"x86_64": "/bin/x"}, Min: 3}}
	var (
		index uint64
		got   []fsm.Assignment
	)
	f.Read(func(v fsm.View) {
		plan := planner.PlanSubmit(v, allUp(v), sub, true)
		index, got = plan.Index, plan.Assignments
		if plan.Unrunnable != "" {
			t.Errorf("a placed job is unrunnable: %q", plan.Unrunnable)
		}
	})
	if index != 2 || len(got) != 2 {
		t.Fatalf("got index %d, assignments %+v, want index 2 and the 2 slots of a", index, got)
	}
	f.Read(func(v fsm.View) {
		if plan := planner.PlanSubmit(v, allUp(v), sub, false); len(plan.Assignments) != 0 || plan.Unrunnable != "" {
			t.Errorf("not to be placed: got %+v, want no assignments and no reason", plan)
		}
	})
	for i, a := range got {
		if a.JobID != 0 || a.Instance != i || a.Attempt != 1 || a.Machine != "a" {
			t.Errorf("assignment %d = %+v, want job 0 (the FSM fills it in), instance %d, attempt 1 on a", i, a, i)
		}
	}

	apply(fsm.SubmitType, sub)
	f.Read(func(v fsm.View) { got = planner.PlanSubmit(v, allUp(v), sub, true).Assignments })
	if len(got) != 0 {
		t.Errorf("got assignments %+v behind a queued job, want none", got)
	}
}

// TestMayPlace says a pass may place something exactly when some machine
// with its stub up takes work and has a free slot, or a preempting queue
// has waiting work; when it says no, the pass places nothing.
func TestMayPlace(t *testing.T) {
	f := fsm.New()
	apply := applier(t, f)
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "a", Arch: "x86_64", CPUs: 1}})
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "b", Arch: "x86_64", CPUs: 1}})
	spec := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1}
	filler := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "u", Spec: spec}).JobID
	apply(fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: filler, Instance: 0, Attempt: 1, Machine: "a", Key: "*"}}})
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "u", Spec: spec})
	check := func(name string, live map[string]planner.Liveness, want bool) {
		t.Helper()
		f.Read(func(v fsm.View) {
			got := planner.MayPlace(v, func(m string) bool { return live[m].Up })
			placed := len(planner.New(v, live, at).Place().Assignments)
			if got != want {
				t.Errorf("%s: MayPlace = %v, want %v", name, got, want)
			}
			if !got && placed != 0 {
				t.Errorf("%s: MayPlace said no, and the pass placed %d", name, placed)
			}
		})
	}
	check("b free and up", map[string]planner.Liveness{"a": {Up: true}, "b": {Up: true}}, true)
	check("b free, its stub down", map[string]planner.Liveness{"a": {Up: true}}, false)
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "u", Spec: spec}) // a second waiting job, placed on b below
	var p fsm.Place
	f.Read(func(v fsm.View) {
		p = planner.New(v, map[string]planner.Liveness{"a": {Up: true}, "b": {Up: true}}, at).Place()
	})
	if len(p.Assignments) != 1 {
		t.Fatalf("placed %d, want 1 (b's slot)", len(p.Assignments))
	}
	p.At = at
	apply(fsm.PlaceType, p)
	check("every slot taken", map[string]planner.Liveness{"a": {Up: true}, "b": {Up: true}}, false)
}

// TestPlaceLimit: a pass limited to n places the first n instances in
// queue order, never part of a gang (a gang crossing the limit is placed
// whole), and the next pass goes on from where it stopped.
func TestPlaceLimit(t *testing.T) {
	f := fsm.New()
	apply := applier(t, f)
	for _, m := range []string{"a", "b", "c"} {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: m, Arch: "x86_64", CPUs: 4}})
	}
	bin := map[string]string{"*": "/bin/x"}
	first := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "u", Spec: fsm.JobSpec{Binaries: bin, Min: 3}}).JobID
	gang := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "u", Spec: fsm.JobSpec{Binaries: bin, Min: 4, Gang: true}}).JobID
	last := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "u", Spec: fsm.JobSpec{Binaries: bin, Min: 5}}).JobID
	pass := func(limit int) fsm.Place {
		t.Helper()
		var p fsm.Place
		f.Read(func(v fsm.View) { p = planner.New(v, allUp(v), at).Limit(limit).Place() })
		p.At = at
		if len(p.Assignments) > 0 {
			apply(fsm.PlaceType, p)
		}
		return p
	}
	perJob := func(p fsm.Place) map[uint64]int {
		n := map[uint64]int{}
		for _, a := range p.Assignments {
			n[a.JobID]++
		}
		return n
	}
	if got := perJob(pass(2)); got[first] != 2 || len(got) != 1 {
		t.Errorf("limit 2: placed %v, want 2 of job %d alone", got, first)
	}
	if got := perJob(pass(2)); got[first] != 1 || got[gang] != 4 || len(got) != 2 {
		t.Errorf("limit 2 again: placed %v, want job %d's last and gang %d whole", got, first, gang)
	}
	if got := perJob(pass(0)); got[last] != 5 || len(got) != 1 {
		t.Errorf("no limit: placed %v, want job %d's 5", got, last)
	}
}
