package planner_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// preemptState returns an FSM with one-slot machines, queues LONG
// (priority 1), MID (5) and DEBUG (10, preempting in mode), and an
// applier.
func preemptState(t *testing.T, mode string, machines ...string) (*fsm.FSM, func(fsm.MessageType, any) *fsm.Result) {
	t.Helper()
	f := fsm.New()
	apply := applier(t, f)
	for _, m := range machines {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: m, Arch: "x86_64", CPUs: 1, MemoryMB: 1024}})
	}
	apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, By: "t", Database: fsm.Database{Queues: []fsm.DeclaredQueue{
		{Name: "LONG", Priority: 1}, {Name: "MID", Priority: 5}, {Name: "DEBUG", Priority: 10, Preempt: mode},
	}}})
	return f, apply
}

// run submits a job of n instances in queue q (restart on failure when
// restartable, a gang when gang) and starts instance i on machines[i].
func run(apply func(fsm.MessageType, any) *fsm.Result, q string, restartable, gang bool, machines ...string) uint64 {
	s := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: len(machines), Queue: q, Gang: gang}
	if restartable {
		s.Restart = fsm.RestartOnFailure
	}
	typ := fsm.SubmitType
	if gang {
		typ = fsm.SubmitGangType
	}
	id := apply(typ, fsm.Submit{At: at, Owner: "ann", Spec: s}).JobID
	var as []fsm.Assignment
	for i, m := range machines {
		as = append(as, fsm.Assignment{JobID: id, Instance: i, Attempt: 1, Machine: m, Key: "*"})
	}
	apply(fsm.PlaceType, fsm.Place{At: at, Assignments: as})
	for i, m := range machines {
		apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: id, Instance: i, Attempt: 1, Machine: m, PID: 100 + i})
	}
	return id
}

// waiting submits a job of n instances in queue q that waits.
func waiting(apply func(fsm.MessageType, any) *fsm.Result, q string, n int, gang bool) uint64 {
	typ := fsm.SubmitType
	if gang {
		typ = fsm.SubmitGangType
	}
	return apply(typ, fsm.Submit{At: at, Owner: "bob", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/y"}, Min: n, Queue: q, Gang: gang}}).JobID
}

// leaderPass runs one scheduler pass as the leader does: resumes, then the
// Place, then the preemption; and the Held reasons of job's instances.
func leaderPass(f *fsm.FSM, job uint64) (resumes []fsm.Preempt, place fsm.Place, pre fsm.Preempt, ok bool, why []string) {
	f.Read(func(v fsm.View) {
		p := planner.New(v, allUp(v), at)
		resumes = p.Resumes()
		place = p.Place()
		pre, ok = p.Preemption()
		planner.New(v, allUp(v), at).Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, h *planner.Held) {
			if it.JobID == job && h != nil {
				why = append(why, h.Reason)
			}
		})
	})
	return
}

func victimsOf(p fsm.Preempt) [][2]uint64 {
	var out [][2]uint64
	for _, v := range p.Victims {
		out = append(out, [2]uint64{v.JobID, uint64(v.Instance)})
	}
	return out
}

func TestPreemptionPicksVictims(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		setup func(apply func(fsm.MessageType, any) *fsm.Result) uint64 // returns the preemptor
		want  [][2]uint64                                               // nil: no preemption
	}{
		{"newest of the lowest priority", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", true, false, "m1") // 1
			run(apply, "LONG", true, false, "m2") // 2
			run(apply, "MID", true, false, "m3")  // 3
			return waiting(apply, "DEBUG", 1, false)
		}, [][2]uint64{{2, 0}}},
		{"lowest priority before newest", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", true, false, "m1") // 1
			run(apply, "MID", true, false, "m2")  // 2
			run(apply, "MID", true, false, "m3")  // 3
			return waiting(apply, "DEBUG", 1, false)
		}, [][2]uint64{{1, 0}}},
		{"never a non-restartable instance for requeue", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", false, false, "m1", "m2", "m3")
			return waiting(apply, "DEBUG", 1, false)
		}, nil},
		{"a non-restartable instance may be suspended", fsm.PreemptSuspend, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", false, false, "m1", "m2", "m3")
			return waiting(apply, "DEBUG", 1, false)
		}, [][2]uint64{{1, 2}}},
		{"never an equal or higher priority", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "DEBUG", true, false, "m1", "m2", "m3")
			return waiting(apply, "DEBUG", 1, false)
		}, nil},
		{"a queue that does not preempt waits", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", true, false, "m1", "m2", "m3")
			return waiting(apply, "MID", 1, false)
		}, nil},
		{"fewest: a single before a gang of two", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", true, false, "m1")      // 1
			run(apply, "LONG", true, true, "m2", "m3") // 2, newer but a gang of 2
			return waiting(apply, "DEBUG", 1, false)
		}, [][2]uint64{{1, 0}}},
		{"a gang is taken whole", fsm.PreemptSuspend, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "DEBUG", true, false, "m1")     // 1, never a victim
			run(apply, "LONG", true, true, "m2", "m3") // 2
			return waiting(apply, "DEBUG", 1, false)
		}, [][2]uint64{{2, 0}, {2, 1}}},
		{"a gang preemptor needs room for all", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", true, false, "m1") // 1
			run(apply, "LONG", true, false, "m2") // 2
			run(apply, "DEBUG", true, false, "m3")
			return waiting(apply, "DEBUG", 2, true)
		}, [][2]uint64{{1, 0}, {2, 0}}},
		{"a gang preemptor without room for all preempts nothing", fsm.PreemptRequeue, func(apply func(fsm.MessageType, any) *fsm.Result) uint64 {
			run(apply, "LONG", true, false, "m1")
			run(apply, "DEBUG", true, false, "m2", "m3")
			return waiting(apply, "DEBUG", 2, true)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, apply := preemptState(t, tc.mode, "m1", "m2", "m3")
			job := tc.setup(apply)
			_, place, pre, ok, _ := leaderPass(f, job)
			if len(place.Assignments) != 0 {
				t.Fatalf("full pool placed %+v", place.Assignments)
			}
			if got := victimsOf(pre); ok != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) || ok && pre.Preemptor != job {
				t.Fatalf("got preemption %v (%v) by job %d, want %v by job %d", got, ok, pre.Preemptor, tc.want, job)
			}
			if !ok {
				return
			}
			if res := apply(fsm.PreemptType, pre); res.Affected != len(tc.want) || res.Dropped != 0 {
				t.Errorf("Apply took %d and dropped %d of the planner's %d victims", res.Affected, res.Dropped, len(tc.want))
			}
		})
	}
}

// TestPreemptionRequeueThenPlace: the preemptor waits for its victim to
// stop, saying so, preempts no more meanwhile, and is placed by the pass
// after the victim's end commits, ahead of the victim queued again.
func TestPreemptionRequeueThenPlace(t *testing.T) {
	f, apply := preemptState(t, fsm.PreemptRequeue, "m1")
	run(apply, "LONG", true, false, "m1")
	job := waiting(apply, "DEBUG", 1, false)
	_, _, pre, ok, _ := leaderPass(f, job)
	if !ok {
		t.Fatal("no preemption on a full pool")
	}
	apply(fsm.PreemptType, pre)
	_, place, _, again, why := leaderPass(f, job)
	if again || len(place.Assignments) != 0 {
		t.Fatalf("while the victim stops: got preemption %v and place %+v, want neither", again, place.Assignments)
	}
	if len(why) != 1 || !strings.Contains(why[0], "preempting: waiting for 1 instance(s) of lower-priority queues to stop") {
		t.Errorf("got why %q, want the preemptor waiting for its victim", why)
	}
	apply(fsm.ChildTermType, fsm.ChildTerm{At: at, JobID: 1, Instance: 0, Attempt: 1, Machine: "m1", Signal: "TERM"})
	_, place, _, again, _ = leaderPass(f, job)
	if again || len(place.Assignments) != 1 || place.Assignments[0].JobID != job {
		t.Fatalf("after the victim's end: got place %+v (preemption %v), want the preemptor placed", place.Assignments, again)
	}
}

// TestPreemptionSuspendThenResume: the preemptor takes the lent slot in
// the next pass; when it ends, the victim resumes before a waiting job
// of its queue can take the slot.
func TestPreemptionSuspendThenResume(t *testing.T) {
	f, apply := preemptState(t, fsm.PreemptSuspend, "m1")
	run(apply, "LONG", false, false, "m1")   // 1
	job := waiting(apply, "DEBUG", 1, false) // 2
	_, _, pre, ok, _ := leaderPass(f, job)
	if !ok {
		t.Fatal("no preemption on a full pool")
	}
	apply(fsm.PreemptType, pre)
	resumes, place, again, _, _ := leaderPass(f, job)
	if len(resumes) != 0 || len(place.Assignments) != 1 || place.Assignments[0].JobID != job || again.Preemptor != 0 {
		t.Fatalf("after the suspend: got resumes %+v place %+v, want the preemptor placed on the lent slot", resumes, place.Assignments)
	}
	apply(fsm.PlaceType, place)
	apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: job, Instance: 0, Attempt: 1, Machine: "m1", PID: 7})
	waiting(apply, "LONG", 1, false) // 3, waits for the slot too
	apply(fsm.ChildTermType, fsm.ChildTerm{At: at, JobID: job, Instance: 0, Attempt: 1, Machine: "m1"})
	resumes, place, _, _, _ = leaderPass(f, 3)
	if len(resumes) != 1 || len(place.Assignments) != 0 {
		t.Fatalf("after the preemptor ended: got resumes %+v and place %+v, want the victim resumed and nothing placed", resumes, place.Assignments)
	}
	if res := apply(fsm.PreemptType, resumes[0]); res.Affected != 1 {
		t.Fatalf("resume dropped")
	}
}

// TestPreemptionSuspendsNoMoreWhileItWaits: when the slot a suspended
// victim lent goes to another job first, the preemptor waits rather than
// suspend a second victim for it.
func TestPreemptionSuspendsNoMoreWhileItWaits(t *testing.T) {
	f, apply := preemptState(t, fsm.PreemptSuspend, "m1", "m2")
	run(apply, "LONG", false, false, "m1")   // 1
	run(apply, "LONG", false, false, "m2")   // 2
	job := waiting(apply, "DEBUG", 1, false) // 3
	_, _, pre, ok, _ := leaderPass(f, job)
	if !ok || len(pre.Victims) != 1 {
		t.Fatalf("got preemption %+v (%v), want one victim", pre, ok)
	}
	apply(fsm.PreemptType, pre)
	lentOn := "m2"
	if pre.Victims[0].JobID == 1 {
		lentOn = "m1"
	}
	other := waiting(apply, "MID", 1, false) // 4 takes the lent slot first
	apply(fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: other, Instance: 0, Attempt: 1, Machine: lentOn, Key: "*"}}})
	_, place, _, again, _ := leaderPass(f, job)
	if again || len(place.Assignments) != 0 {
		t.Errorf("got preemption %v and place %+v, want the preemptor to wait without suspending a second victim", again, place.Assignments)
	}
}
