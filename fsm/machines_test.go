package fsm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func TestStubJoin(t *testing.T) {
	t.Run("new machine", func(t *testing.T) {
		a := newApplier(t)
		f := facts("m1", "x86_64", 4, "lic-b", "lic-a")
		f.Mounts = []string{"/usr", "/home"}
		res := a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(10), Machine: f})
		if res.Index != 1 {
			t.Errorf("got Result.Index %d, want 1", res.Index)
		}
		m := a.machine("m1")
		if m.State != fsm.MachineUp {
			t.Errorf("got state %q, want %q", m.State, fsm.MachineUp)
		}
		if !m.JoinedAt.Equal(at(10)) {
			t.Errorf("got JoinedAt %v, want %v", m.JoinedAt, at(10))
		}
		if m.CreateIndex != 1 || m.ModifyIndex != 1 {
			t.Errorf("got CreateIndex %d ModifyIndex %d, want 1 and 1", m.CreateIndex, m.ModifyIndex)
		}
		if got, want := m.Keys, []string{"lic-a", "lic-b"}; !slices.Equal(got, want) {
			t.Errorf("got keys %v, want %v (sorted)", got, want)
		}
		if got, want := m.Mounts, []string{"/home", "/usr"}; !slices.Equal(got, want) {
			t.Errorf("got mounts %v, want %v (sorted)", got, want)
		}
		if m.Slots() != 4 {
			t.Errorf("got Slots() %d, want 4", m.Slots())
		}
		var names []string
		a.f.Read(func(v fsm.View) {
			for _, m := range v.Machines() {
				names = append(names, m.Name)
			}
		})
		if want := []string{"m1"}; !slices.Equal(names, want) {
			t.Errorf("got machines %v, want %v", names, want)
		}
	})

	t.Run("rejoin of a down machine brings it up with new facts", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		a.leave("m1", "missed contact")
		if got := a.machine("m1").State; got != fsm.MachineDown {
			t.Fatalf("after leave: got state %q, want %q", got, fsm.MachineDown)
		}
		a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(100), Machine: facts("m1", "arm64", 8, "gpu")})
		m := a.machine("m1")
		if m.State != fsm.MachineUp {
			t.Errorf("got state %q, want %q", m.State, fsm.MachineUp)
		}
		if m.Arch != "arm64" || m.CPUs != 8 || !slices.Equal(m.Keys, []string{"gpu"}) {
			t.Errorf("got facts arch=%q cpus=%d keys=%v, want arm64, 8, [gpu]", m.Arch, m.CPUs, m.Keys)
		}
		if !m.JoinedAt.Equal(at(100)) {
			t.Errorf("got JoinedAt %v, want %v", m.JoinedAt, at(100))
		}
		if m.LeaveReason != "" {
			t.Errorf("got LeaveReason %q, want empty", m.LeaveReason)
		}
		if m.CreateIndex != 1 || m.ModifyIndex != 3 {
			t.Errorf("got CreateIndex %d ModifyIndex %d, want 1 and 3", m.CreateIndex, m.ModifyIndex)
		}
	})

	t.Run("rejoin of an up machine keeps JoinedAt and its instances", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		id := a.submit("j", 1)
		a.place(asg(id, 0, "m1"))
		a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(100), Machine: facts("m1", "x86_64", 2, "new")})
		m := a.machine("m1")
		if !m.JoinedAt.Equal(at(0)) {
			t.Errorf("got JoinedAt %v, want %v", m.JoinedAt, at(0))
		}
		if got := a.instance(id, 0).State; got != fsm.InstancePlaced {
			t.Errorf("got instance state %q, want %q", got, fsm.InstancePlaced)
		}
		if got := a.running("m1"); got != 1 {
			t.Errorf("got Running %d, want 1", got)
		}
	})

	invalid := []struct {
		name  string
		facts fsm.MachineFacts
	}{
		{"no name", facts("", "x86_64", 2)},
		{"no arch", facts("m1", "", 2)},
	}
	for _, tc := range invalid {
		t.Run("invalid facts/"+tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 2)
			before := stateBytes(t, a.f)
			res := a.apply(fsm.StubJoinType, fsm.StubJoin{At: at(5), Machine: tc.facts})
			wantErr(t, res.Err, fsm.ErrInvalidMachine)
			assertUnchanged(t, a.f, before)
		})
	}
}

func TestStubLeave(t *testing.T) {
	t.Run("active instances are lost", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		a.join("m2", "x86_64", 4)
		id := a.submit("j", 4)
		a.place(asg(id, 0, "m1"), asg(id, 1, "m1"), asg(id, 2, "m2"))
		a.register(id, 0, "m1", 100)
		a.mustOK(fsm.StubLeaveType, fsm.StubLeave{At: at(60), Machine: "m1", Reason: "missed contact"})

		m := a.machine("m1")
		if m.State != fsm.MachineDown || !m.LeftAt.Equal(at(60)) || m.LeaveReason != "missed contact" {
			t.Errorf("got state %q LeftAt %v reason %q, want down, %v, %q", m.State, m.LeftAt, m.LeaveReason, at(60), "missed contact")
		}
		for _, i := range []int{0, 1} {
			in := a.instance(id, i)
			if in.State != fsm.InstanceLost {
				t.Errorf("instance %d: got state %q, want %q", i, in.State, fsm.InstanceLost)
			}
			if !strings.Contains(in.Error, "m1") || !strings.Contains(in.Error, "missed contact") {
				t.Errorf("instance %d: got error %q, want it to name m1 and the reason", i, in.Error)
			}
			if !in.EndedAt.Equal(at(60)) {
				t.Errorf("instance %d: got EndedAt %v, want %v", i, in.EndedAt, at(60))
			}
		}
		if got := a.instance(id, 2).State; got != fsm.InstancePlaced {
			t.Errorf("instance on m2: got state %q, want %q", got, fsm.InstancePlaced)
		}
		if got := a.instance(id, 3).State; got != fsm.InstanceQueued {
			t.Errorf("queued instance: got state %q, want %q", got, fsm.InstanceQueued)
		}
		if got := a.running("m1"); got != 0 {
			t.Errorf("got Running(m1) %d, want 0", got)
		}
		if got := a.running("m2"); got != 1 {
			t.Errorf("got Running(m2) %d, want 1", got)
		}
		var active []fsm.InstanceRef
		a.f.Read(func(v fsm.View) { active = v.Active() })
		if want := []fsm.InstanceRef{{JobID: id, Instance: 2}}; !slices.Equal(active, want) {
			t.Errorf("got Active %v, want %v", active, want)
		}
		if got := a.job(id).ModifyIndex; got != a.next-1 {
			t.Errorf("got job ModifyIndex %d, want %d", got, a.next-1)
		}
	})

	t.Run("finished instances are not lost", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		id := a.submit("j", 1)
		a.place(asg(id, 0, "m1"))
		a.term(id, 0, "m1", 0)
		a.leave("m1", "gone")
		if got := a.instance(id, 0).State; got != fsm.InstanceExited {
			t.Errorf("got state %q, want %q", got, fsm.InstanceExited)
		}
	})

	noops := []struct {
		name  string
		setup func(a *applier)
	}{
		{"unknown machine", func(a *applier) { a.join("m1", "x86_64", 1) }},
		{"machine already down", func(a *applier) {
			a.join("nope", "x86_64", 1)
			a.leave("nope", "first")
		}},
	}
	for _, tc := range noops {
		t.Run("no-op/"+tc.name, func(t *testing.T) {
			a := newApplier(t)
			tc.setup(a)
			before := stateBytes(t, a.f)
			res := a.apply(fsm.StubLeaveType, fsm.StubLeave{At: at(99), Machine: "nope", Reason: "second"})
			wantErr(t, res.Err, nil)
			assertUnchanged(t, a.f, before)
		})
	}
}

// TestStubJoinFactsWhileBusy pins what happens when an up machine re-reports
// fewer CPUs than it has instances: StubJoin applies the facts as reported
// (Running may then exceed Slots until instances end), and Place accepts
// nothing more there until Running drops below the new slot count.
func TestStubJoinFactsWhileBusy(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 3)
	id := a.submit("j", 4)
	a.place(asg(id, 0, "m1"), asg(id, 1, "m1"), asg(id, 2, "m1"))
	a.join("m1", "x86_64", 1)
	if got := a.running("m1"); got != 3 {
		t.Errorf("got Running %d, want 3 (instances keep their slots)", got)
	}
	if res := a.place(asg(id, 3, "m1")); len(res.Accepted) != 0 {
		t.Errorf("overcommitted machine: got Accepted %v, want none", res.Accepted)
	}
	a.term(id, 0, "m1", 0)
	a.term(id, 1, "m1", 0)
	if res := a.place(asg(id, 3, "m1")); len(res.Accepted) != 0 {
		t.Errorf("one instance left on one slot: got Accepted %v, want none", res.Accepted)
	}
	a.term(id, 2, "m1", 0)
	if res := a.place(asg(id, 3, "m1")); len(res.Accepted) != 1 {
		t.Errorf("machine idle: got Accepted %v, want one", res.Accepted)
	}
}
