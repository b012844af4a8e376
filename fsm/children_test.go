package fsm_test

import (
	"reflect"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// placedJob returns an applier with machines m1 and m2 up (2 CPUs each) and
// a job of two instances, instance 0 placed on m1 and instance 1 queued.
func placedJob(t *testing.T) (*applier, uint64) {
	t.Helper()
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.join("m2", "x86_64", 2)
	id := a.submit("j", 2)
	if res := a.place(asg(id, 0, "m1")); len(res.Accepted) != 1 {
		t.Fatalf("place: got Accepted %v, want one", res.Accepted)
	}
	return a, id
}

func TestChildRegister(t *testing.T) {
	t.Run("placed becomes running", func(t *testing.T) {
		a, id := placedJob(t)
		res := a.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at(40), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", PID: 4242})
		wantErr(t, res.Err, nil)
		if res.Stale || res.JobID != id {
			t.Errorf("got Stale %v JobID %d, want false and %d", res.Stale, res.JobID, id)
		}
		in := a.instance(id, 0)
		if in.State != fsm.InstanceRunning || in.PID != 4242 || !in.StartedAt.Equal(at(40)) {
			t.Errorf("got state %q pid %d started %v, want running, 4242, %v", in.State, in.PID, in.StartedAt, at(40))
		}
		if in.ModifyIndex != res.Index || a.job(id).ModifyIndex != res.Index {
			t.Errorf("got instance ModifyIndex %d job ModifyIndex %d, want %d", in.ModifyIndex, a.job(id).ModifyIndex, res.Index)
		}
		if got := a.running("m1"); got != 1 {
			t.Errorf("got Running %d, want 1", got)
		}
		var active []fsm.InstanceRef
		a.f.Read(func(v fsm.View) { active = v.Active() })
		if len(active) != 1 || active[0] != ref(id, 0) {
			t.Errorf("got Active %v, want [%v]", active, ref(id, 0))
		}
	})

	noops := []struct {
		name  string
		setup func(a *applier, id uint64)
	}{
		{"duplicate", func(a *applier, id uint64) { a.register(id, 0, "m1", 4242) }},
		{"after term", func(a *applier, id uint64) { a.term(id, 0, "m1", 0) }},
	}
	for _, tc := range noops {
		t.Run("no-op/"+tc.name, func(t *testing.T) {
			a, id := placedJob(t)
			tc.setup(a, id)
			before := stateBytes(t, a.f)
			res := a.register(id, 0, "m1", 999)
			wantErr(t, res.Err, nil)
			if res.Stale {
				t.Errorf("got Stale true, want false")
			}
			assertUnchanged(t, a.f, before)
		})
	}
}

// staleCases are CHILD events that do not name the current attempt of an
// instance on the machine it was placed on.
var staleCases = []struct {
	name     string
	instance int
	attempt  uint64
	machine  string
}{
	{"wrong attempt", 0, 2, "m1"},
	{"old attempt", 0, 0, "m1"},
	{"wrong machine", 0, 1, "m2"},
	{"queued instance", 1, 1, "m1"},
}

func TestChildEventsStale(t *testing.T) {
	events := []struct {
		name string
		cmd  func(inst int, attempt uint64, machine string) (fsm.MessageType, any)
	}{
		{"register", func(inst int, attempt uint64, machine string) (fsm.MessageType, any) {
			return fsm.ChildRegisterType, fsm.ChildRegister{At: at(40), JobID: 1, Instance: inst, Attempt: attempt, Machine: machine, PID: 7}
		}},
		{"term", func(inst int, attempt uint64, machine string) (fsm.MessageType, any) {
			return fsm.ChildTermType, fsm.ChildTerm{At: at(40), JobID: 1, Instance: inst, Attempt: attempt, Machine: machine, ExitCode: 1}
		}},
	}
	for _, ev := range events {
		for _, tc := range staleCases {
			t.Run(ev.name+"/"+tc.name, func(t *testing.T) {
				a, id := placedJob(t)
				before := a.job(id)
				runningBefore := a.running("m1")
				typ, body := ev.cmd(tc.instance, tc.attempt, tc.machine)
				res := a.apply(typ, body)
				wantErr(t, res.Err, nil)
				if !res.Stale {
					t.Errorf("got Stale false, want true")
				}
				after := a.job(id)
				for i := range after.Instances {
					got, want := after.Instances[i], before.Instances[i]
					if i == tc.instance {
						if got.StaleEvents != want.StaleEvents+1 {
							t.Errorf("got StaleEvents %d, want %d", got.StaleEvents, want.StaleEvents+1)
						}
						got.StaleEvents, got.ModifyIndex = want.StaleEvents, want.ModifyIndex
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("instance %d changed beyond its stale count:\ngot  %+v\nwant %+v", i, got, want)
					}
				}
				if got := a.running("m1"); got != runningBefore {
					t.Errorf("got Running %d, want %d", got, runningBefore)
				}
			})
		}
	}

	t.Run("unknown job", func(t *testing.T) {
		a, _ := placedJob(t)
		before := stateBytes(t, a.f)
		res := a.register(99, 0, "m1", 1)
		if !res.Stale {
			t.Errorf("got Stale false, want true")
		}
		wantErr(t, res.Err, fsm.ErrNoSuchJob)
		assertUnchanged(t, a.f, before)
	})

	t.Run("unknown instance", func(t *testing.T) {
		a, id := placedJob(t)
		before := stateBytes(t, a.f)
		res := a.term(id, 5, "m1", 0)
		if !res.Stale {
			t.Errorf("got Stale false, want true")
		}
		wantErr(t, res.Err, fsm.ErrNoSuchInstance)
		assertUnchanged(t, a.f, before)
	})
}

// TestChildEvents applies a batch as one entry: its events take effect in
// order at the entry's index, each with its own result, and a stale event
// among them changes nothing but its count.
func TestChildEvents(t *testing.T) {
	a, id := placedJob(t)
	one, _ := placedJob(t)
	reg := fsm.ChildRegister{At: at(40), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", PID: 4242}
	stale := fsm.ChildRegister{At: at(40), JobID: id, Instance: 1, Attempt: 1, Machine: "m2", PID: 1}
	term := fsm.ChildTerm{At: at(41), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 3}
	res := a.mustOK(fsm.ChildEventsType, fsm.ChildEvents{Events: []fsm.ChildEvent{{Register: &reg}, {Register: &stale}, {Term: &term}}})
	if len(res.Events) != 3 {
		t.Fatalf("got %d event results, want 3", len(res.Events))
	}
	for i, want := range []bool{false, true, false} {
		if ev := res.Events[i]; ev.Stale != want || ev.Index != res.Index {
			t.Errorf("event %d: got Stale %v Index %d, want %v and %d", i, ev.Stale, ev.Index, want, res.Index)
		}
	}
	in := a.instance(id, 0)
	if in.State != fsm.InstanceFailed || in.PID != 4242 || in.ExitCode != 3 || !in.StartedAt.Equal(at(40)) {
		t.Errorf("got state %q pid %d exit %d started %v, want failed, 4242, 3, %v", in.State, in.PID, in.ExitCode, in.StartedAt, at(40))
	}
	if got := a.instance(id, 1).StaleEvents; got != 1 {
		t.Errorf("queued instance: got StaleEvents %d, want 1", got)
	}
	// The same events as entries of their own reach the same records
	// (only the indexes they stamp differ).
	one.apply(fsm.ChildRegisterType, reg)
	one.apply(fsm.ChildRegisterType, stale)
	one.apply(fsm.ChildTermType, term)
	if got, want := one.instance(id, 0), in; got.State != want.State || got.ExitCode != want.ExitCode || got.PID != want.PID {
		t.Errorf("one by one: got %q exit %d pid %d, batched %q exit %d pid %d", got.State, got.ExitCode, got.PID, want.State, want.ExitCode, want.PID)
	}
}

func TestChildTerm(t *testing.T) {
	tests := []struct {
		name     string
		register bool
		kill     bool
		term     fsm.ChildTerm
		want     string
	}{
		{"exit 0 while running", true, false, fsm.ChildTerm{ExitCode: 0}, fsm.InstanceExited},
		{"exit 0 while placed", false, false, fsm.ChildTerm{ExitCode: 0}, fsm.InstanceExited},
		{"non-zero exit", true, false, fsm.ChildTerm{ExitCode: 2}, fsm.InstanceFailed},
		{"start error", false, false, fsm.ChildTerm{ExitCode: 0, Error: "exec: no such file"}, fsm.InstanceFailed},
		{"signal", true, false, fsm.ChildTerm{ExitCode: -1, Signal: "SEGV"}, fsm.InstanceSignaled},
		{"signal with zero code", true, false, fsm.ChildTerm{Signal: "HUP"}, fsm.InstanceSignaled},
		{"after kill, exit 0", true, true, fsm.ChildTerm{ExitCode: 0}, fsm.InstanceKilled},
		{"after kill, signaled", true, true, fsm.ChildTerm{ExitCode: -1, Signal: "TERM"}, fsm.InstanceKilled},
		{"after kill, while placed", false, true, fsm.ChildTerm{ExitCode: 1}, fsm.InstanceKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, id := placedJob(t)
			if tc.register {
				a.register(id, 0, "m1", 10)
			}
			if tc.kill {
				a.mustOK(fsm.KillType, fsm.Kill{At: at(8), JobID: id, By: "alice"})
			}
			term := tc.term
			term.At, term.JobID, term.Instance, term.Attempt, term.Machine = at(60), id, 0, 1, "m1"
			term.UserMS, term.SysMS, term.MaxRSSKB = 11, 22, 33
			res := a.mustOK(fsm.ChildTermType, term)
			if res.Stale || res.JobID != id {
				t.Errorf("got Stale %v JobID %d, want false and %d", res.Stale, res.JobID, id)
			}
			in := a.instance(id, 0)
			if in.State != tc.want {
				t.Errorf("got state %q, want %q", in.State, tc.want)
			}
			if in.ExitCode != term.ExitCode || in.Signal != term.Signal || in.Error != term.Error {
				t.Errorf("got code %d signal %q error %q, want %d, %q, %q", in.ExitCode, in.Signal, in.Error, term.ExitCode, term.Signal, term.Error)
			}
			if in.UserMS != 11 || in.SysMS != 22 || in.MaxRSSKB != 33 || !in.EndedAt.Equal(at(60)) {
				t.Errorf("got usage %d/%d/%d ended %v, want 11/22/33 and %v", in.UserMS, in.SysMS, in.MaxRSSKB, in.EndedAt, at(60))
			}
			if got := a.running("m1"); got != 0 {
				t.Errorf("got Running %d, want 0", got)
			}
			var active []fsm.InstanceRef
			a.f.Read(func(v fsm.View) { active = v.Active() })
			if len(active) != 0 {
				t.Errorf("got Active %v, want none", active)
			}
		})
	}

	t.Run("frees the slot", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 1)
		id := a.submit("j", 2)
		a.place(asg(id, 0, "m1"))
		if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 0 {
			t.Fatalf("machine full: got Accepted %v, want none", res.Accepted)
		}
		a.register(id, 0, "m1", 1)
		a.term(id, 0, "m1", 0)
		if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 1 {
			t.Errorf("after term: got Accepted %v, want one", res.Accepted)
		}
	})

	t.Run("duplicate term is a no-op", func(t *testing.T) {
		a, id := placedJob(t)
		a.term(id, 0, "m1", 0)
		before := stateBytes(t, a.f)
		res := a.term(id, 0, "m1", 5)
		wantErr(t, res.Err, nil)
		if res.Stale {
			t.Errorf("got Stale true, want false")
		}
		assertUnchanged(t, a.f, before)
	})

	t.Run("term for a lost instance records the result", func(t *testing.T) {
		a, id := placedJob(t)
		a.register(id, 0, "m1", 10)
		a.leave("m1", "partition")
		if got := a.instance(id, 0).State; got != fsm.InstanceLost {
			t.Fatalf("after leave: got state %q, want %q", got, fsm.InstanceLost)
		}
		res := a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(70), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 0})
		if res.Stale {
			t.Errorf("got Stale true, want false")
		}
		in := a.instance(id, 0)
		if in.State != fsm.InstanceExited || in.Error != "" || !in.EndedAt.Equal(at(70)) {
			t.Errorf("got state %q error %q ended %v, want exited, empty, %v", in.State, in.Error, in.EndedAt, at(70))
		}
		if got := a.running("m1"); got != 0 {
			t.Errorf("got Running %d, want 0", got)
		}
		// A second term for it is a duplicate now.
		before := stateBytes(t, a.f)
		a.term(id, 0, "m1", 9)
		assertUnchanged(t, a.f, before)
	})

	t.Run("register for a lost instance is a no-op", func(t *testing.T) {
		a, id := placedJob(t)
		a.leave("m1", "partition")
		before := stateBytes(t, a.f)
		res := a.register(id, 0, "m1", 10)
		if res.Stale || res.Err != nil {
			t.Errorf("got Stale %v Err %v, want false and nil", res.Stale, res.Err)
		}
		assertUnchanged(t, a.f, before)
	})
}

func TestChildTermLeftovers(t *testing.T) {
	a, id := placedJob(t)
	a.register(id, 0, "m1", 4242)
	left := []fsm.Leftover{{PID: 4250, Comm: "sleep"}, {PID: 4251, Comm: "sh"}}
	res := a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(50), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", Leftovers: left})
	in := a.instance(id, 0)
	if in.State != fsm.InstanceExited || !reflect.DeepEqual(in.Leftovers, left) {
		t.Errorf("got state %q leftovers %v, want exited and %v", in.State, in.Leftovers, left)
	}
	var evs []fsm.Event
	a.f.Read(func(v fsm.View) { evs = v.EventsSince(0) })
	var got *fsm.Event
	for i := range evs {
		if evs[i].Kind == fsm.EventInstanceLeftovers {
			got = &evs[i]
		}
	}
	want := "killed 2 leftover process(es): 4250 (sleep), 4251 (sh)"
	if got == nil || got.Index != res.Index || got.Job != id || got.Detail != want {
		t.Errorf("got leftover event %+v, want one at index %d for job %d with detail %q", got, res.Index, id, want)
	}
}
