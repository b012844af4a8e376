package fsm_test

import (
	"errors"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// eventsAt returns the events committed at index.
func eventsAt(a *applier, index uint64) []fsm.Event {
	var out []fsm.Event
	a.f.Read(func(v fsm.View) {
		for _, e := range v.EventsSince(0) {
			if e.Index == index {
				out = append(out, e)
			}
		}
	})
	return out
}

func TestMachineHealth(t *testing.T) {
	t.Run("a problem stops new work and its end lets it go again", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		job := a.submit("j", 2)
		res := a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(10), Machine: "m1", Problem: "exec dir full: 0 B free"})
		m := a.machine("m1")
		if m.Unhealthy != "exec dir full: 0 B free" || m.Accepts() || m.ModifyIndex != res.Index {
			t.Fatalf("got Unhealthy %q Accepts %v ModifyIndex %d, want the problem, false and %d", m.Unhealthy, m.Accepts(), m.ModifyIndex, res.Index)
		}
		if evs := eventsAt(a, res.Index); len(evs) != 1 || evs[0].Kind != fsm.EventMachineUnhealthy || evs[0].Detail != "exec dir full: 0 B free" {
			t.Errorf("got events %+v, want one %s with the problem", evs, fsm.EventMachineUnhealthy)
		}
		if got := a.place(asg(job, 0, "m1")); len(got.Accepted) != 0 || got.Dropped != 1 {
			t.Errorf("place on an unhealthy machine: got Accepted %v Dropped %d, want none and 1", got.Accepted, got.Dropped)
		}

		again := a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(11), Machine: "m1", Problem: "exec dir full: 0 B free"})
		if a.machine("m1").ModifyIndex != res.Index || len(eventsAt(a, again.Index)) != 0 {
			t.Errorf("the same problem again changed the machine or made an event")
		}

		ok := a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(12), Machine: "m1"})
		if m := a.machine("m1"); m.Unhealthy != "" || !m.Accepts() {
			t.Fatalf("after the problem cleared: got Unhealthy %q Accepts %v, want none and true", m.Unhealthy, m.Accepts())
		}
		if evs := eventsAt(a, ok.Index); len(evs) != 1 || evs[0].Kind != fsm.EventMachineHealthy {
			t.Errorf("got events %+v, want one %s", evs, fsm.EventMachineHealthy)
		}
		if got := a.place(asg(job, 0, "m1")); len(got.Accepted) != 1 {
			t.Errorf("place once healthy: got Accepted %v, want one", got.Accepted)
		}
	})

	t.Run("apart from the database's drain", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1"}}})
		a.load(fsm.Database{}) // drains m1
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(10), Machine: "m1", Problem: "health check: fan failed"})
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(11), Machine: "m1"})
		if m := a.machine("m1"); !m.Draining || m.Accepts() {
			t.Errorf("clearing the health undrained the database's drain: Draining %v Accepts %v", m.Draining, m.Accepts())
		}
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(12), Machine: "m1", Problem: "health check: fan failed"})
		a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1"}}}) // undrains m1
		if m := a.machine("m1"); m.Draining || m.Unhealthy == "" || m.Accepts() {
			t.Errorf("redeclaring the machine cleared its health: Draining %v Unhealthy %q Accepts %v", m.Draining, m.Unhealthy, m.Accepts())
		}
	})

	t.Run("a stub joining again reports afresh", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		a.mustOK(fsm.MachineHealthType, fsm.MachineHealth{At: at(10), Machine: "m1", Problem: "data dir full: 0 B free"})
		a.join("m1", "x86_64", 2) // already up: a refresh of its facts
		if a.machine("m1").Unhealthy == "" {
			t.Errorf("a join of an up machine cleared its health")
		}
		a.leave("m1", "left")
		a.join("m1", "x86_64", 2)
		if got := a.machine("m1").Unhealthy; got != "" {
			t.Errorf("after the machine came back: Unhealthy %q, want none until its stub reports", got)
		}
	})

	t.Run("unknown machine", func(t *testing.T) {
		a := newApplier(t)
		res := a.apply(fsm.MachineHealthType, fsm.MachineHealth{At: at(10), Machine: "nope", Problem: "x"})
		if !errors.Is(res.Err, fsm.ErrNoSuchMachine) {
			t.Errorf("got %v, want %v", res.Err, fsm.ErrNoSuchMachine)
		}
	})
}

func TestChildTermMachineFault(t *testing.T) {
	tests := []struct {
		name    string
		restart string
		kill    bool
		want    string // the instance's state after the TERM
	}{
		{"no restart policy", fsm.RestartNo, false, fsm.InstanceQueued},
		{"on-failure", fsm.RestartOnFailure, false, fsm.InstanceQueued},
		{"killed job", fsm.RestartNo, true, fsm.InstanceKilled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 2)
			s := spec("j", 1)
			s.Restart = tt.restart
			job := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
			a.place(asg(job, 0, "m1"))
			if tt.kill {
				a.mustOK(fsm.KillType, fsm.Kill{At: at(3), JobID: job, By: "alice"})
			}
			a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(4), JobID: job, Instance: 0, Attempt: 1, Machine: "m1",
				ExitCode: 127, Error: "not started: exec dir full: 0 B free", MachineFault: true})
			in := a.instance(job, 0)
			if in.State != tt.want {
				t.Fatalf("got state %q, want %q", in.State, tt.want)
			}
			if tt.want != fsm.InstanceQueued {
				return
			}
			if in.Attempt != 2 || in.Restarts != 0 || !in.NotBefore.IsZero() || in.Machine != "" {
				t.Errorf("got attempt %d restarts %d not before %v machine %q, want 2, 0, none, none", in.Attempt, in.Restarts, in.NotBefore, in.Machine)
			}
			if len(in.History) != 1 || in.History[0].Error != "not started: exec dir full: 0 B free" || in.History[0].Machine != "m1" {
				t.Errorf("got history %+v, want the failed attempt on m1 with its error", in.History)
			}
			if a.running("m1") != 0 {
				t.Errorf("the failed attempt still holds a slot on m1")
			}
		})
	}

	t.Run("without the flag a failure counts", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 2)
		job := a.submit("j", 1)
		a.place(asg(job, 0, "m1"))
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(4), JobID: job, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 1})
		if in := a.instance(job, 0); in.State != fsm.InstanceFailed {
			t.Errorf("got state %q, want %q", in.State, fsm.InstanceFailed)
		}
	})
}
