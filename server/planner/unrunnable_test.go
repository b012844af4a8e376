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
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			f.Read(func(v fsm.View) {
				got = planner.Unrunnable(v, live, fsm.Submit{At: at, Owner: "fred", Spec: tc.spec}, at)
			})
			if got != tc.want {
				t.Errorf("Unrunnable() = %q, want %q", got, tc.want)
			}
		})
	}
}
