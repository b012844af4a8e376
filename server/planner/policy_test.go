package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// policyState returns an FSM with one-slot machines names and queues
// DED (dedicated), SPREAD (spread) and GANG (gang) beside the default
// queue, and a function that applies commands to it.
func policyState(t *testing.T, names ...string) (*fsm.FSM, func(fsm.MessageType, any) *fsm.Result) {
	t.Helper()
	f := fsm.New()
	apply := applier(t, f)
	for _, m := range names {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: m, Arch: "x86_64", CPUs: 1, MemoryMB: 1024}})
	}
	for _, q := range []fsm.DeclaredQueue{{Name: "DED", Policy: "dedicated"}, {Name: "SPREAD", Policy: "spread"}, {Name: "GANG", Policy: "gang"}} {
		apply(fsm.SetQueueType, fsm.SetQueue{At: at, By: "admin", Queue: q})
	}
	return f, apply
}

// job is n instances of /bin/x for owner in queue q.
func job(owner, q string, n int) fsm.Submit {
	return fsm.Submit{At: at, Owner: owner, Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: n, Queue: q}}
}

// TestPolicyDedicated: a machine running a dedicated queue's job takes
// no other owner's work, and a dedicated job goes only where no other
// owner runs; both queues share the pool in one pass.
func TestPolicyDedicated(t *testing.T) {
	// Two-slot machines, so sharing would be possible.
	f := fsm.New()
	apply := applier(t, f)
	for _, m := range []string{"m1", "m2"} {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: m, Arch: "x86_64", CPUs: 2, MemoryMB: 1024}})
	}
	apply(fsm.SetQueueType, fsm.SetQueue{At: at, By: "admin", Queue: fsm.DeclaredQueue{Name: "DED", Policy: "dedicated"}})
	apply(fsm.SubmitType, job("ann", "DED", 1)) // job 1
	apply(fsm.SubmitType, job("bob", "", 3))    // job 2
	apply(fsm.SubmitType, job("cy", "DED", 1))  // job 3
	got, why := plan(f, at, 3)
	perMachine := map[string][]uint64{}
	for _, a := range got.Assignments {
		perMachine[a.Machine] = append(perMachine[a.Machine], a.JobID)
	}
	var annOn string
	for m, jobs := range perMachine {
		for _, id := range jobs {
			if id == 1 {
				annOn = m
			}
		}
	}
	if annOn == "" {
		t.Fatalf("got %+v, want ann's dedicated job placed", got.Assignments)
	}
	for _, id := range perMachine[annOn] {
		if id != 1 {
			t.Errorf("machine %s runs ann's dedicated job and job %d too: %+v", annOn, id, got.Assignments)
		}
	}
	bob := 0
	for _, a := range got.Assignments {
		if a.JobID == 2 {
			bob++
		}
		if a.JobID == 3 {
			t.Errorf("cy's dedicated job placed on %s beside another owner's work", a.Machine)
		}
	}
	if bob != 2 {
		t.Errorf("bob got %d instances placed, want 2 (the other machine's slots)", bob)
	}
	if len(why) != 1 || !strings.Contains(why[0], "queue DED is dedicated") {
		t.Errorf("cy's why %q, want the dedicated reason", why)
	}
}

// TestPolicySpread: a waiting job of a spread queue holds no machine for
// itself, where the same job in a backfill queue sets machines aside.
func TestPolicySpread(t *testing.T) {
	for _, tc := range []struct {
		queue     string
		wantLater bool // the later job without a run limit is placed
	}{{"", false}, {"SPREAD", true}} {
		t.Run("queue "+tc.queue, func(t *testing.T) {
			f, apply := policyState(t, "m1", "m2")
			busy := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/busy"}, Min: 1, Machines: []string{"m1"}}
			apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "ann", Spec: busy})
			apply(fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: 1, Instance: 0, Attempt: 1, Machine: "m1", Key: "*"}}})
			g := job("bob", tc.queue, 2)
			g.Spec.Gang = true
			apply(fsm.SubmitGangType, g)            // job 2 waits for m1
			apply(fsm.SubmitType, job("cy", "", 1)) // job 3, no run limit
			got, _ := plan(f, at.Add(time.Minute), 2)
			placed := len(got.Assignments) == 1 && got.Assignments[0].JobID == 3
			if placed != tc.wantLater {
				t.Errorf("got %+v, want the later job placed: %v", got.Assignments, tc.wantLater)
			}
		})
	}
}

// TestPolicyGang: every job of a gang queue is a gang, placed whole.
func TestPolicyGang(t *testing.T) {
	f, apply := policyState(t, "m1", "m2")
	apply(fsm.SubmitType, job("ann", "GANG", 3)) // three instances, two machines
	var gang bool
	f.Read(func(v fsm.View) {
		j, _ := v.Job(1)
		gang = j.Spec.Gang
	})
	if !gang {
		t.Fatalf("a job of the gang queue is not a gang")
	}
	got, why := plan(f, at, 1)
	if len(got.Assignments) != 0 || len(why) != 3 || !strings.Contains(why[0], "gang of 3") {
		t.Errorf("got %+v, why %q; want nothing placed and the gang's reason", got.Assignments, why)
	}
}
