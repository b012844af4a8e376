package fsm_test

import (
	"errors"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func TestMachineAsleep(t *testing.T) {
	t.Run("asleep stops new work and waking lets it go again", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		job := a.submit("j", 2)
		res := a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(10), Machine: "m1", Reason: "console login"})
		m := a.machine("m1")
		if m.Asleep != "console login" || m.Accepts() || !m.Usable() || m.ModifyIndex != res.Index {
			t.Fatalf("got Asleep %q Accepts %v Usable %v ModifyIndex %d, want the reason, false, true and %d",
				m.Asleep, m.Accepts(), m.Usable(), m.ModifyIndex, res.Index)
		}
		if evs := eventsAt(a, res.Index); len(evs) != 1 || evs[0].Kind != fsm.EventMachineAsleep || evs[0].Detail != "asleep (console login)" {
			t.Errorf("got events %+v, want one %s with the reason", evs, fsm.EventMachineAsleep)
		}
		if got := a.place(asg(job, 0, "m1")); len(got.Accepted) != 0 || got.Dropped != 1 {
			t.Errorf("place on an asleep machine: got Accepted %v Dropped %d, want none and 1", got.Accepted, got.Dropped)
		}

		again := a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(11), Machine: "m1", Reason: "console login"})
		if a.machine("m1").ModifyIndex != res.Index || len(eventsAt(a, again.Index)) != 0 {
			t.Errorf("the same verdict again changed the machine or made an event")
		}
		other := a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(12), Machine: "m1", Reason: "load 3.2 > 2"})
		if evs := eventsAt(a, other.Index); a.machine("m1").Asleep != "load 3.2 > 2" || len(evs) != 1 || evs[0].Detail != "asleep (load 3.2 > 2)" {
			t.Errorf("a new reason: got Asleep %q events %+v, want the new reason and one event", a.machine("m1").Asleep, evs)
		}

		awake := a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(13), Machine: "m1"})
		if m := a.machine("m1"); m.Asleep != "" || !m.Accepts() {
			t.Fatalf("after waking: got Asleep %q Accepts %v, want none and true", m.Asleep, m.Accepts())
		}
		if evs := eventsAt(a, awake.Index); len(evs) != 1 || evs[0].Kind != fsm.EventMachineAwake {
			t.Errorf("got events %+v, want one %s", evs, fsm.EventMachineAwake)
		}
		if got := a.place(asg(job, 0, "m1")); len(got.Accepted) != 1 {
			t.Errorf("place once awake: got Accepted %v, want one", got.Accepted)
		}
	})

	t.Run("running work is left alone", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		job := a.submit("j", 1)
		a.place(asg(job, 0, "m1"))
		a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(10), Machine: "m1", Reason: "keyboard used"})
		if in := a.instance(job, 0); in.State != fsm.InstancePlaced || in.Machine != "m1" {
			t.Errorf("got state %q on %q, want placed on m1", in.State, in.Machine)
		}
	})

	t.Run("apart from health and the database's drain", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(10), Machine: "m1", Problem: "exec dir full: 0 B free"})
		a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(11), Machine: "m1", Reason: "console login"})
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(12), Machine: "m1"})
		if m := a.machine("m1"); m.Asleep == "" || m.Accepts() {
			t.Errorf("clearing the health woke the machine: Asleep %q Accepts %v", m.Asleep, m.Accepts())
		}
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(13), Machine: "m1", Problem: "health check: fan"})
		a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(14), Machine: "m1"})
		if m := a.machine("m1"); m.Unhealthy == "" || m.Accepts() {
			t.Errorf("waking cleared the health: Unhealthy %q Accepts %v", m.Unhealthy, m.Accepts())
		}
	})

	t.Run("a stub joining again reports afresh", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		a.mustOK(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(10), Machine: "m1", Reason: "console login"})
		a.join("m1", "x86_64", 2) // already up: a refresh of its facts
		if a.machine("m1").Asleep == "" {
			t.Errorf("a join of an up machine woke it")
		}
		a.leave("m1", "left")
		a.join("m1", "x86_64", 2)
		if got := a.machine("m1").Asleep; got != "" {
			t.Errorf("after the machine came back: Asleep %q, want none until its stub reports", got)
		}
	})

	t.Run("unknown machine", func(t *testing.T) {
		a := newApplier(t)
		res := a.apply(fsm.MachineAsleepType, fsm.MachineAsleep{At: at(10), Machine: "nope", Reason: "x"})
		if !errors.Is(res.Err, fsm.ErrNoSuchMachine) {
			t.Errorf("got %v, want %v", res.Err, fsm.ErrNoSuchMachine)
		}
	})
}
