package planner_test

import (
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// TestUnrunnable: a job no machine meets the requirements of gets the
// matcher's reason, whatever the machines' state; one that some machine
// could run gets none, even when that machine is down or full.
func TestUnrunnable(t *testing.T) {
	f, apply := newState(t)
	// a's two slots are full, and b is down: both can still run jobs.
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 2}})
	var place fsm.Place
	f.Read(func(v fsm.View) { place = planner.New(v, allUp(v), at).Place() })
	apply(fsm.PlaceType, place)
	live := map[string]planner.Liveness{"a": {Up: true}}
	for _, tc := range []struct {
		name string
		spec fsm.JobSpec
		want string
	}{
		{"any machine", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}}, ""},
		{"the down one's arch", fsm.JobSpec{Binaries: map[string]string{"sparc": "/bin/s"}}, ""},
		{"no such key", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Keys: []string{"mathlab"}}, "2 machines lack key mathlab"},
		{"no such arch", fsm.JobSpec{Binaries: map[string]string{"mips": "/bin/m"}}, "2 machines lack binary key mips"},
		{"too small", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Requirements: []fsm.Requirement{{Attr: "nprocs", Op: ">", Value: 4}}},
			"2 machines have nprocs<=4"},
		// a has 2 slots, b 1: a gang of 3 fits, of 4 never does.
		{"gang that fits", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 3, Gang: true}, ""},
		{"gang too large", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 4, Gang: true},
			"a gang of 4 needs 4 slots at once; the 2 machines that can run it have 3"},
		{"unique gang", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 3, Gang: true, Unique: true},
			"a gang of 3 needs 3 slots at once; the 2 machines that can run it have 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			f.Read(func(v fsm.View) {
				got = planner.PlanSubmit(v, live, fsm.Submit{At: at, Owner: "fred", Spec: tc.spec}, false).Unrunnable
			})
			if got != tc.want {
				t.Errorf("PlanSubmit().Unrunnable = %q, want %q", got, tc.want)
			}
		})
	}
}

// A job that asks nothing of a machine is runnable on any pool with a
// machine (the fast path), and not on an empty one; only an idle>=
// requirement needs the pool's liveness.
func TestUnrunnableUnconstrained(t *testing.T) {
	any := fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}}}
	f, _ := newState(t)
	f.Read(func(v fsm.View) {
		if got := planner.PlanSubmit(v, nil, any, false).Unrunnable; got != "" {
			t.Errorf("on a pool with machines: Unrunnable = %q, want \"\"", got)
		}
	})
	empty := fsm.New()
	empty.Read(func(v fsm.View) {
		if got := planner.PlanSubmit(v, nil, any, false).Unrunnable; got == "" {
			t.Errorf("on an empty pool: Unrunnable = \"\", want a reason")
		}
	})
	f.Read(func(v fsm.View) {
		if planner.SubmitNeedsLiveness(v, any, false) {
			t.Errorf("SubmitNeedsLiveness of a job without requirements, not placed = true")
		}
		if !planner.SubmitNeedsLiveness(v, any, true) {
			t.Errorf("SubmitNeedsLiveness of a job to place on a pool where nothing waits = false")
		}
		idle := fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Requirements: []fsm.Requirement{{Attr: planner.IdleAttr, Op: ">=", Value: 30}}}}
		if !planner.SubmitNeedsLiveness(v, idle, false) {
			t.Errorf("SubmitNeedsLiveness of idle>=30 = false")
		}
	})
}
