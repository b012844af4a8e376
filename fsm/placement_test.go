package fsm_test

import (
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func TestPlaceAccepted(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.join("m2", "sparc", 2, "lic")
	res := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: fsm.JobSpec{
		Binaries: map[string]string{"x86_64": "/bin/a", "sparc": "/bin/b", "lic": "/bin/c"},
		Min:      3,
	}})
	id := res.JobID
	plan := []fsm.Assignment{
		{JobID: id, Instance: 0, Attempt: 1, Machine: "m1", Key: "x86_64"},
		{JobID: id, Instance: 1, Attempt: 1, Machine: "m2", Key: "sparc"},
		{JobID: id, Instance: 2, Attempt: 1, Machine: "m2", Key: "lic"},
	}
	res = a.mustOK(fsm.PlaceType, fsm.Place{At: at(30), PlannedAtIndex: 3, Assignments: plan})
	if !slices.Equal(res.Accepted, plan) || res.Dropped != 0 {
		t.Fatalf("got Accepted %v Dropped %d, want all %d and 0", res.Accepted, res.Dropped, len(plan))
	}
	for _, p := range plan {
		in := a.instance(id, p.Instance)
		if in.State != fsm.InstancePlaced || in.Machine != p.Machine || in.Key != p.Key {
			t.Errorf("instance %d: got state %q machine %q key %q, want placed, %q, %q", p.Instance, in.State, in.Machine, in.Key, p.Machine, p.Key)
		}
		if !in.PlacedAt.Equal(at(30)) || in.ModifyIndex != res.Index {
			t.Errorf("instance %d: got PlacedAt %v ModifyIndex %d, want %v and %d", p.Instance, in.PlacedAt, in.ModifyIndex, at(30), res.Index)
		}
	}
	if got := a.running("m1"); got != 1 {
		t.Errorf("got Running(m1) %d, want 1", got)
	}
	if got := a.running("m2"); got != 2 {
		t.Errorf("got Running(m2) %d, want 2", got)
	}
	var queued, active []fsm.InstanceRef
	a.f.Read(func(v fsm.View) { queued, active = v.Queued(), v.Active() })
	if len(queued) != 0 {
		t.Errorf("got Queued %v, want none", queued)
	}
	if want := []fsm.InstanceRef{ref(id, 0), ref(id, 1), ref(id, 2)}; !slices.Equal(active, want) {
		t.Errorf("got Active %v, want %v", active, want)
	}
	j := a.job(id)
	if j.ModifyIndex != res.Index {
		t.Errorf("got job ModifyIndex %d, want %d", j.ModifyIndex, res.Index)
	}
	if got := j.State(); got != fsm.JobRunning {
		t.Errorf("got State() %q, want %q", got, fsm.JobRunning)
	}
}

func TestPlaceDropped(t *testing.T) {
	// Every case starts from: m1 (x86_64, 2 CPUs, key "lic"), m2 down,
	// job 1 with 4 queued instances whose binaries are "*", "x86_64",
	// "lic" and "sparc"; job 2 with one instance already placed on m1.
	setup := func(t *testing.T) *applier {
		a := newApplier(t)
		a.join("m1", "x86_64", 2, "lic")
		a.join("m2", "x86_64", 2)
		a.leave("m2", "gone")
		a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: fsm.JobSpec{
			Binaries: map[string]string{"*": "/bin/any", "x86_64": "/bin/x", "lic": "/bin/l", "sparc": "/bin/s"},
			Min:      4,
		}})
		id := a.submit("other", 1)
		a.place(asg(id, 0, "m1"))
		return a
	}
	x := func(inst int, machine, key string, attempt uint64) fsm.Assignment {
		return fsm.Assignment{JobID: 1, Instance: inst, Attempt: attempt, Machine: machine, Key: key}
	}
	tests := []struct {
		name string
		plan []fsm.Assignment
		// wantAccepted are indexes into plan.
		wantAccepted []int
	}{
		{"unknown job", []fsm.Assignment{{JobID: 99, Instance: 0, Attempt: 1, Machine: "m1", Key: "*"}}, nil},
		{"unknown instance", []fsm.Assignment{x(7, "m1", "*", 1)}, nil},
		{"negative instance", []fsm.Assignment{x(-1, "m1", "*", 1)}, nil},
		{"instance not queued", []fsm.Assignment{{JobID: 2, Instance: 0, Attempt: 1, Machine: "m1", Key: "*"}}, nil},
		{"wrong attempt", []fsm.Assignment{x(0, "m1", "*", 2)}, nil},
		{"attempt zero", []fsm.Assignment{x(0, "m1", "*", 0)}, nil},
		{"machine down", []fsm.Assignment{x(0, "m2", "*", 1)}, nil},
		{"machine unknown", []fsm.Assignment{x(0, "m9", "*", 1)}, nil},
		{"no free slot within one place", []fsm.Assignment{x(0, "m1", "*", 1), x(1, "m1", "x86_64", 1)}, []int{0}},
		{"key not in job binaries", []fsm.Assignment{x(0, "m1", "arm64", 1)}, nil},
		{"machine lacks key", []fsm.Assignment{x(3, "m1", "sparc", 1)}, nil},
		{"same instance twice in one place", []fsm.Assignment{x(0, "m1", "*", 1), x(0, "m1", "*", 1)}, []int{0}},
		{"wildcard key matches any machine", []fsm.Assignment{x(0, "m1", "*", 1)}, []int{0}},
		{"arch key matches", []fsm.Assignment{x(1, "m1", "x86_64", 1)}, []int{0}},
		{"machine key matches", []fsm.Assignment{x(2, "m1", "lic", 1)}, []int{0}},
		{"good and bad mixed", []fsm.Assignment{x(0, "m2", "*", 1), x(1, "m1", "sparc", 1), x(2, "m1", "lic", 1)}, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := setup(t)
			before := stateBytes(t, a.f)
			res := a.mustOK(fsm.PlaceType, fsm.Place{At: at(30), Assignments: tc.plan})
			var want []fsm.Assignment
			for _, i := range tc.wantAccepted {
				want = append(want, tc.plan[i])
			}
			if !slices.Equal(res.Accepted, want) {
				t.Errorf("got Accepted %v, want %v", res.Accepted, want)
			}
			if got, wantDropped := res.Dropped, len(tc.plan)-len(want); got != wantDropped {
				t.Errorf("got Dropped %d, want %d", got, wantDropped)
			}
			if len(want) == 0 {
				assertUnchanged(t, a.f, before)
			}
			var m1 fsm.Machine
			a.f.Read(func(v fsm.View) {
				m, _ := v.Machine("m1")
				m1 = *m
			})
			if got := a.running("m1"); got > m1.Slots() {
				t.Errorf("got Running(m1) %d, want at most %d", got, m1.Slots())
			}
		})
	}
}

func TestPlaceSlots(t *testing.T) {
	t.Run("third placement on two CPUs is dropped", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		id := a.submit("j", 3)
		res := a.place(asg(id, 0, "m1"), asg(id, 1, "m1"), asg(id, 2, "m1"))
		if len(res.Accepted) != 2 || res.Dropped != 1 {
			t.Fatalf("got %d accepted %d dropped, want 2 and 1", len(res.Accepted), res.Dropped)
		}
		if got := a.instance(id, 2).State; got != fsm.InstanceQueued {
			t.Errorf("dropped instance: got state %q, want %q", got, fsm.InstanceQueued)
		}
		if got := a.running("m1"); got != 2 {
			t.Errorf("got Running %d, want 2", got)
		}
	})

	t.Run("zero CPUs still gives one slot", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 0)
		id := a.submit("j", 2)
		res := a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
		if len(res.Accepted) != 1 || res.Dropped != 1 {
			t.Errorf("got %d accepted %d dropped, want 1 and 1", len(res.Accepted), res.Dropped)
		}
	})

	tests := []struct {
		name string
		end  func(a *applier, id uint64)
	}{
		{"exit", func(a *applier, id uint64) { a.term(id, 0, "m1", 0) }},
		{"failure", func(a *applier, id uint64) { a.term(id, 0, "m1", 1) }},
		{"kill then term", func(a *applier, id uint64) {
			a.mustOK(fsm.KillType, fsm.Kill{At: at(5), JobID: id, By: "alice"})
			a.term(id, 0, "m1", 0)
		}},
		{"machine left and rejoined", func(a *applier, id uint64) {
			a.leave("m1", "reboot")
			a.join("m1", "x86_64", 1)
		}},
	}
	for _, tc := range tests {
		t.Run("slot freed by "+tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 1)
			id := a.submit("first", 1)
			next := a.submit("second", 1)
			a.place(asg(id, 0, "m1"))
			if res := a.place(asg(next, 0, "m1")); len(res.Accepted) != 0 {
				t.Fatalf("while busy: got Accepted %v, want none", res.Accepted)
			}
			tc.end(a, id)
			if got := a.running("m1"); got != 0 {
				t.Errorf("got Running %d, want 0", got)
			}
			if res := a.place(asg(next, 0, "m1")); len(res.Accepted) != 1 {
				t.Errorf("after end: got Accepted %v, want one", res.Accepted)
			}
		})
	}
}

func TestPlaceDuplicated(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	id := a.submit("j", 2)
	data := encode(t, command{fsm.PlaceType, fsm.Place{At: at(2), PlannedAtIndex: 2, Assignments: []fsm.Assignment{asg(id, 0, "m1"), asg(id, 1, "m1")}}})
	first := a.raw(data)
	if len(first.Accepted) != 2 {
		t.Fatalf("first: got Accepted %v, want 2", first.Accepted)
	}
	before := stateBytes(t, a.f)
	second := a.raw(data)
	if len(second.Accepted) != 0 || second.Dropped != 2 {
		t.Errorf("second: got Accepted %v Dropped %d, want none and 2", second.Accepted, second.Dropped)
	}
	assertUnchanged(t, a.f, before)
	if got := a.running("m1"); got != 2 {
		t.Errorf("got Running %d, want 2", got)
	}
}

func TestHasKey(t *testing.T) {
	m := &fsm.Machine{MachineFacts: facts("m1", "x86_64", 1, "lic")}
	tests := []struct {
		key  string
		want bool
	}{
		{fsm.AnyKey, true},
		{"x86_64", true},
		{"lic", true},
		{"sparc", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run("key="+tc.key, func(t *testing.T) {
			if got := m.HasKey(tc.key); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
