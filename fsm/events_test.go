package fsm_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// events returns the events of a after index.
func (a *applier) events(after uint64) []fsm.Event {
	a.tb.Helper()
	var out []fsm.Event
	a.f.Read(func(v fsm.View) { out = v.EventsSince(after) })
	return out
}

// kinds lists the kinds of evs, each followed by its machine when it has one.
func kinds(evs []fsm.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		k := e.Kind
		if e.Machine != "" {
			k += "@" + e.Machine
		}
		out = append(out, k)
	}
	return out
}

func TestEvents(t *testing.T) {
	restartable := func(name string) fsm.JobSpec {
		s := spec(name, 1)
		s.Restart = fsm.RestartOnFailure
		return s
	}
	tests := []struct {
		name string
		run  func(a *applier)
		want []string
	}{
		{
			name: "leader elected",
			run: func(a *applier) {
				a.mustOK(fsm.LeaderElectedType, fsm.LeaderElected{At: at(0), Name: "s1", Term: 2})
			},
			want: []string{fsm.EventLeaderElected},
		},
		{
			name: "job runs to the end",
			run: func(a *applier) {
				a.join("m1", "x86_64", 2)
				id := a.submit("j", 1)
				a.place(asg(id, 0, "m1"))
				a.register(id, 0, "m1", 42)
				a.register(id, 0, "m1", 42) // duplicate: no event
				a.term(id, 0, "m1", 0)
			},
			want: []string{"machine-joined@m1", "job-submitted", "instance-placed@m1", "instance-started@m1", "instance-ended@m1"},
		},
		{
			name: "failure restarts, stale event is fenced",
			run: func(a *applier) {
				a.join("m1", "x86_64", 2)
				id := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: restartable("r")}).JobID
				a.place(asg(id, 0, "m1"))
				a.register(id, 0, "m1", 42)
				a.term(id, 0, "m1", 3)
				a.term(id, 0, "m1", 3) // attempt 1 again: fenced
			},
			want: []string{"machine-joined@m1", "job-submitted", "instance-placed@m1", "instance-started@m1",
				"instance-failed@m1", "instance-restarted", "instance-fenced@m1"},
		},
		{
			name: "lease expiry and return",
			run: func(a *applier) {
				a.join("m1", "x86_64", 2)
				r := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: restartable("r")}).JobID
				p := a.submit("p", 1)
				a.place(asg(r, 0, "m1"), asg(p, 0, "m1"))
				a.register(r, 0, "m1", 1)
				a.register(p, 0, "m1", 2)
				a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(5), Machine: "m1"})
				a.mustOK(fsm.LeaseRestoredType, fsm.LeaseRestored{At: at(6), Machine: "m1",
					Running: []fsm.AttemptRef{{JobID: p, Instance: 0, Attempt: 1}}})
			},
			want: []string{"machine-joined@m1", "job-submitted", "job-submitted", "instance-placed@m1", "instance-placed@m1",
				"instance-started@m1", "instance-started@m1", "machine-unreachable@m1", "instance-lost@m1", "instance-restarted",
				"instance-unknown@m1", "machine-back@m1", "instance-started@m1"},
		},
		{
			name: "machine leaves, job killed, database loaded",
			run: func(a *applier) {
				a.join("m1", "x86_64", 2)
				id := a.submit("j", 2)
				a.place(asg(id, 0, "m1"))
				a.leave("m1", "gossip says dead")
				a.mustOK(fsm.KillType, fsm.Kill{At: at(60), JobID: id, By: "alice"})
				a.load(fsm.Database{})
			},
			want: []string{"machine-joined@m1", "job-submitted", "instance-placed@m1", "machine-left@m1", "instance-lost@m1",
				"instance-killed", "job-killed", "database-loaded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApplier(t)
			tt.run(a)
			evs := a.events(0)
			if got := kinds(evs); !slices.Equal(got, tt.want) {
				t.Fatalf("got events %v, want %v", got, tt.want)
			}
			for i, e := range evs {
				if e.At.IsZero() || e.Index == 0 || (i > 0 && e.Index < evs[i-1].Index) {
					t.Errorf("event %d %+v: want a time and a non-decreasing index", i, e)
				}
			}
			if last := evs[len(evs)-1]; len(a.events(last.Index)) != 0 {
				t.Errorf("EventsSince(%d): got events, want none", last.Index)
			}
		})
	}
}

// Session events record who opened, took back and closed a session, on
// its instance and machine; an unknown kind is refused and records
// nothing.
func TestSessionEvents(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	id := a.submit("j", 1)
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 42)
	last := a.events(0)
	after := last[len(last)-1].Index
	se := func(kind, by string, shell bool) fsm.SessionEvent {
		return fsm.SessionEvent{At: at(9), Kind: kind, By: by, JobID: id, Instance: 0, Attempt: 1, Machine: "m1", Shell: shell}
	}
	a.mustOK(fsm.SessionEventType|fsm.IgnoreUnknownFlag, se(fsm.SessionOpened, "alice", false))
	a.mustOK(fsm.SessionEventType|fsm.IgnoreUnknownFlag, se(fsm.SessionAttached, "root", false))
	a.mustOK(fsm.SessionEventType, se(fsm.SessionClosed, "alice", true))
	if res := a.apply(fsm.SessionEventType|fsm.IgnoreUnknownFlag, se("detonated", "alice", false)); res.Err == nil {
		t.Errorf("session event of kind detonated: got no error, want one")
	}
	evs := a.events(after)
	want := []struct{ kind, detail string }{
		{fsm.EventSessionOpened, "session opened by alice"},
		{fsm.EventSessionAttached, "session attached by root"},
		{fsm.EventSessionClosed, "shell closed by alice"},
	}
	if len(evs) != len(want) {
		t.Fatalf("got events %v, want %d session events", kinds(evs), len(want))
	}
	for i, w := range want {
		e := evs[i]
		if e.Kind != w.kind || e.Detail != w.detail || e.Job != id || e.Instance != 0 || e.Attempt != 1 || e.Machine != "m1" || !e.At.Equal(at(9)) {
			t.Errorf("event %d: got %+v, want %s %q on job %d instance 0 attempt 1 on m1", i, e, w.kind, w.detail, id)
		}
	}
}

func TestEventsRingIsBounded(t *testing.T) {
	a := newApplier(t)
	n := fsm.EventCapacity + 10
	for i := range n {
		a.mustOK(fsm.LeaderElectedType, fsm.LeaderElected{At: at(i), Name: "s1", Term: uint64(i)})
	}
	evs := a.events(0)
	if len(evs) != fsm.EventCapacity {
		t.Fatalf("got %d events, want %d", len(evs), fsm.EventCapacity)
	}
	if got, want := evs[0].Index, uint64(11); got != want {
		t.Errorf("oldest index: got %d, want %d", got, want)
	}
	if got, want := len(a.events(uint64(n-5))), 5; got != want {
		t.Errorf("EventsSince(%d): got %d events, want %d", n-5, got, want)
	}
	var kept int
	restored(t, snapshotBytes(t, a.f)).Read(func(v fsm.View) { kept = len(v.EventsSince(0)) })
	if kept != 0 {
		t.Errorf("restored replica: got %d events, want an empty ring", kept)
	}
}

func TestEventsDeterminism(t *testing.T) {
	for _, seed := range []uint64{3, 11} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			g := newGenerator(t, seed)
			for range 2000 {
				g.next()
			}
			replicas := make([][]fsm.Event, 2)
			for i := range replicas {
				a := newApplier(t)
				for _, data := range g.log {
					a.raw(data)
				}
				replicas[i] = a.events(0)
			}
			if len(replicas[0]) == 0 {
				t.Fatalf("got no events, want some")
			}
			if !reflect.DeepEqual(replicas[0], replicas[1]) {
				t.Errorf("replicas applying the same log have different event rings")
			}
			if got, want := replicas[0], g.a.events(0); !reflect.DeepEqual(got, want) {
				t.Errorf("replica and driver have different event rings")
			}
		})
	}
}
