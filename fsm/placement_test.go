package fsm_test

import (
	"fmt"
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
	a := newApplier(t)
	a.join("m1", "x86_64", 1, "lic")
	m := a.machine("m1")
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

// limitJob submits a job of n instances that runs anywhere with the given
// per-machine bounds and memory, and returns its id.
func (a *applier) limitJob(name string, n int, unique bool, maxPer int, memMB int64) uint64 {
	a.tb.Helper()
	s := spec(name, n)
	s.Unique, s.MaxPerMachine, s.MemoryMB = unique, maxPer, memMB
	return a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
}

func TestPlaceDrainingMachine(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.join("m2", "x86_64", 4)
	a.load(declaring("m1", "m2"))
	id := a.submit("j", 3)
	a.load(declaring("m2"))
	res := a.place(asg(id, 0, "m1"), asg(id, 1, "m2"))
	if want := []fsm.Assignment{asg(id, 1, "m2")}; !slices.Equal(res.Accepted, want) || res.Dropped != 1 {
		t.Errorf("got Accepted %v Dropped %d, want %v and 1", res.Accepted, res.Dropped, want)
	}
	if got := a.instance(id, 0).State; got != fsm.InstanceQueued {
		t.Errorf("dropped instance: got state %q, want %q", got, fsm.InstanceQueued)
	}
	a.load(declaring("m1", "m2"))
	if res := a.place(asg(id, 0, "m1")); len(res.Accepted) != 1 {
		t.Errorf("after redeclaring m1: got Accepted %v, want one", res.Accepted)
	}
}

func TestPlaceSlotsFromNprocs(t *testing.T) {
	tests := []struct {
		name  string
		setup func(a *applier)
		want  int // slots
	}{
		{"declared nprocs below CPUs", func(a *applier) {
			a.join("m1", "x86_64", 8)
			a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1", Attrs: map[string]float64{"nprocs": 2}}}})
		}, 2},
		{"declared nprocs above CPUs", func(a *applier) {
			a.join("m1", "x86_64", 1)
			a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1", Attrs: map[string]float64{"nprocs": 3}}}})
		}, 3},
		{"nprocs of the declared mtype", func(a *applier) {
			a.join("m1", "x86_64", 8)
			a.load(fsm.Database{
				MTypes:   []fsm.DeclaredMType{{Name: "small", Attrs: map[string]float64{"nprocs": 1}}},
				Machines: []fsm.DeclaredMachine{{Name: "m1", MType: "small"}},
			})
		}, 1},
		{"init file nprocs", func(a *applier) {
			f := facts("m1", "x86_64", 8)
			f.Attrs = map[string]float64{"nprocs": 2}
			a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: f})
		}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			tc.setup(a)
			id := a.submit("j", 10)
			var plan []fsm.Assignment
			for i := range tc.want + 1 {
				plan = append(plan, asg(id, i, "m1"))
			}
			res := a.place(plan...)
			if !slices.Equal(res.Accepted, plan[:tc.want]) || res.Dropped != 1 {
				t.Errorf("got Accepted %v Dropped %d, want the first %d and 1", res.Accepted, res.Dropped, tc.want)
			}
			if res := a.place(asg(id, tc.want+1, "m1")); len(res.Accepted) != 0 {
				t.Errorf("full machine, next place: got Accepted %v, want none", res.Accepted)
			}
		})
	}
}

func TestPlacePerMachineLimit(t *testing.T) {
	tests := []struct {
		name   string
		unique bool
		maxPer int
		// batches are Places of instances (in order) on m1, then m2;
		// want is how many of each batch are accepted.
		batches [][2]int // {on m1, on m2}
		want    [][2]int
	}{
		{"unique within one place", true, 0, [][2]int{{3, 2}}, [][2]int{{1, 1}}},
		{"unique across places", true, 0, [][2]int{{1, 0}, {1, 1}, {0, 1}}, [][2]int{{1, 0}, {0, 1}, {0, 0}}},
		{"max_per_machine within one place", false, 2, [][2]int{{3, 3}}, [][2]int{{2, 2}}},
		{"max_per_machine across places", false, 2, [][2]int{{1, 0}, {2, 1}, {1, 1}}, [][2]int{{1, 0}, {1, 1}, {0, 1}}},
		{"unique wins over max_per_machine", true, 3, [][2]int{{2, 0}}, [][2]int{{1, 0}}},
		// m1 has 4 slots, one held by another job.
		{"no limit is the slots", false, 0, [][2]int{{5, 0}}, [][2]int{{3, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			a.join("m2", "x86_64", 4)
			id := a.limitJob("limited", 10, tc.unique, tc.maxPer, 0)
			other := a.submit("other", 4)
			// Another job's instances never count against this one's limit.
			a.place(asg(other, 0, "m1"))
			next := 0
			for b, batch := range tc.batches {
				var plan []fsm.Assignment
				for range batch[0] {
					plan = append(plan, asg(id, next, "m1"))
					next++
				}
				for range batch[1] {
					plan = append(plan, asg(id, next, "m2"))
					next++
				}
				res := a.place(plan...)
				var got [2]int
				for _, x := range res.Accepted {
					if x.Machine == "m1" {
						got[0]++
					} else {
						got[1]++
					}
				}
				if got != tc.want[b] {
					t.Errorf("batch %d: got accepted %v on m1, m2, want %v", b, got, tc.want[b])
				}
			}
			if limit := (&fsm.JobSpec{Unique: tc.unique, MaxPerMachine: tc.maxPer}).PerMachineLimit(); limit > 0 {
				for _, m := range []string{"m1", "m2"} {
					if counts, _ := a.usage(m); counts[id] > limit {
						t.Errorf("%s: got %d instances of the job, want at most %d", m, counts[id], limit)
					}
				}
			}
		})
	}

	t.Run("an ended instance frees its place under the limit", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		id := a.limitJob("limited", 3, true, 0, 0)
		a.place(asg(id, 0, "m1"))
		if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 0 {
			t.Fatalf("while one runs: got Accepted %v, want none", res.Accepted)
		}
		a.term(id, 0, "m1", 0)
		if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 1 {
			t.Errorf("after it ended: got Accepted %v, want one", res.Accepted)
		}
	})
}

func TestPerMachineLimit(t *testing.T) {
	tests := []struct {
		spec fsm.JobSpec
		want int
	}{
		{fsm.JobSpec{}, 0},
		{fsm.JobSpec{Unique: true}, 1},
		{fsm.JobSpec{MaxPerMachine: 3}, 3},
		{fsm.JobSpec{Unique: true, MaxPerMachine: 3}, 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("unique=%v max=%d", tc.spec.Unique, tc.spec.MaxPerMachine), func(t *testing.T) {
			if got := tc.spec.PerMachineLimit(); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPlaceMemory(t *testing.T) {
	// m1: 1000 MB detected, 8 CPUs, so only memory limits it.
	setup := func(t *testing.T) *applier {
		a := newApplier(t)
		f := facts("m1", "x86_64", 8)
		f.MemoryMB = 1000
		a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: f})
		return a
	}
	t.Run("within one place", func(t *testing.T) {
		a := setup(t)
		big := a.limitJob("big", 2, false, 0, 600)
		small := a.limitJob("small", 2, false, 0, 400)
		tiny := a.limitJob("tiny", 1, false, 0, 1)
		free := a.limitJob("free", 2, false, 0, 0)
		plan := []fsm.Assignment{asg(big, 0, "m1"), asg(big, 1, "m1"), asg(small, 0, "m1"), asg(tiny, 0, "m1"), asg(free, 0, "m1"), asg(free, 1, "m1")}
		res := a.place(plan...)
		// 600 + 400 fills it exactly; the second 600 and the 1 MB do not
		// fit; jobs asking no memory are not limited by it.
		if want := []fsm.Assignment{plan[0], plan[2], plan[4], plan[5]}; !slices.Equal(res.Accepted, want) || res.Dropped != 2 {
			t.Errorf("got Accepted %v Dropped %d, want %v and 2", res.Accepted, res.Dropped, want)
		}
		if _, used := a.usage("m1"); used != 1000 {
			t.Errorf("got UsedMemoryMB %d, want 1000", used)
		}
	})
	t.Run("across places and freed by the end", func(t *testing.T) {
		a := setup(t)
		id := a.limitJob("j", 3, false, 0, 400)
		for i, want := range []int{1, 1, 0} {
			if res := a.place(asg(id, i, "m1")); len(res.Accepted) != want {
				t.Errorf("place %d: got Accepted %v, want %d", i, res.Accepted, want)
			}
		}
		a.register(id, 0, "m1", 10)
		a.term(id, 0, "m1", 0)
		if res := a.place(asg(id, 2, "m1")); len(res.Accepted) != 1 {
			t.Errorf("after one ended: got Accepted %v, want one", res.Accepted)
		}
	})
	t.Run("memory from the declaration", func(t *testing.T) {
		a := setup(t)
		a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1", Attrs: map[string]float64{"mem": 16}}}})
		id := a.limitJob("j", 2, false, 0, 32)
		ok := a.limitJob("ok", 1, false, 0, 16)
		if res := a.place(asg(id, 0, "m1"), asg(ok, 0, "m1")); !slices.Equal(res.Accepted, []fsm.Assignment{asg(ok, 0, "m1")}) {
			t.Errorf("got Accepted %v, want only the 16 MB job", res.Accepted)
		}
	})
	t.Run("lowered under running work", func(t *testing.T) {
		a := setup(t)
		id := a.limitJob("j", 3, false, 0, 400)
		a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
		a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1", Attrs: map[string]float64{"mem": 500}}}})
		if got := a.instance(id, 1).State; got != fsm.InstancePlaced {
			t.Errorf("got state %q, want %q (left alone)", got, fsm.InstancePlaced)
		}
		if res := a.place(asg(id, 2, "m1")); len(res.Accepted) != 0 {
			t.Errorf("over its memory: got Accepted %v, want none", res.Accepted)
		}
	})
}
