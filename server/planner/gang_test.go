package planner_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// gangState returns an FSM with three one-slot machines m1..m3, a job
// (id 1) running on m3 with a time limit of limit seconds (0: none), and
// a gang of three (id 2) queued behind it; and a function that applies
// commands to it.
func gangState(t *testing.T, limit int64) (*fsm.FSM, func(fsm.MessageType, any) *fsm.Result) {
	t.Helper()
	f := fsm.New()
	apply := applier(t, f)
	for _, m := range []string{"m1", "m2", "m3"} {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: m, Arch: "x86_64", CPUs: 1, MemoryMB: 1024}})
	}
	busy := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/busy"}, Min: 1, Machines: []string{"m3"}, TimeLimitSeconds: limit}
	apply(fsm.SubmitLimitsType, fsm.Submit{At: at, Owner: "ann", Spec: busy})
	apply(fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: 1, Instance: 0, Attempt: 1, Machine: "m3", Key: "*"}}})
	apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: 1, Instance: 0, Attempt: 1, Machine: "m3", PID: 10})
	gang := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/mpi"}, Min: 3, Gang: true}
	apply(fsm.SubmitGangType, fsm.Submit{At: at, Owner: "bob", Spec: gang})
	return f, apply
}

// plan runs one pass at now and returns its Place and the Held reason of
// job's instances.
func plan(f *fsm.FSM, now time.Time, job uint64) (fsm.Place, []string) {
	var (
		got  fsm.Place
		why  []string
		live map[string]planner.Liveness
	)
	f.Read(func(v fsm.View) {
		live = allUp(v)
		got = planner.New(v, live, now).Place()
		planner.New(v, live, now).Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, h *planner.Held) {
			if it.JobID == job && h != nil {
				why = append(why, h.Reason)
			}
		})
	})
	return got, why
}

// TestGangWaitsWithoutHolding: with two of three machines free, a gang
// places nothing, says what it needs, and a later job without a run limit
// does not take the free machines; once the third frees, the next pass
// places all three.
func TestGangWaitsWithoutHolding(t *testing.T) {
	f, apply := gangState(t, 0)
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "cy", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/small"}, Min: 1}}) // job 3
	now := at.Add(time.Minute)
	got, why := plan(f, now, 2)
	if len(got.Assignments) != 0 {
		t.Fatalf("got assignments %+v, want none: the gang waits whole and the small job must not take its machines", got.Assignments)
	}
	if len(why) != 3 || !strings.Contains(why[0], "gang of 3: needs 3 machine slots at once, 2 could run it now") ||
		!strings.Contains(why[0], "set aside") {
		t.Errorf("got why %q, want the gang's need and the machines set aside, for each of 3 instances", why)
	}
	apply(fsm.ChildTermType, fsm.ChildTerm{At: now, JobID: 1, Instance: 0, Attempt: 1, Machine: "m3"})
	got, _ = plan(f, now, 2)
	if len(got.Assignments) != 3 {
		t.Fatalf("got assignments %+v, want the gang's three", got.Assignments)
	}
	machines := map[string]bool{}
	for i, a := range got.Assignments {
		if a.JobID != 2 || a.Instance != i {
			t.Errorf("assignment %d = %+v, want job 2 instance %d", i, a, i)
		}
		machines[a.Machine] = true
	}
	if len(machines) != 3 {
		t.Errorf("got machines %v, want three", machines)
	}
	res := apply(fsm.PlaceType, got)
	if len(res.Accepted) != 3 {
		t.Errorf("the FSM accepted %v of the plan, want all three", res.Accepted)
	}
}

// TestGangShadowBackfill: the gang's planned start is the end of what
// runs on the machine it waits for; a later job that ends before it
// backfills a set-aside machine, one that ends after it does not.
func TestGangShadowBackfill(t *testing.T) {
	f, apply := gangState(t, 600)
	short := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/short"}, Min: 1, TimeLimitSeconds: 60}
	long := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/long"}, Min: 1, TimeLimitSeconds: 3600}
	apply(fsm.SubmitLimitsType, fsm.Submit{At: at, Owner: "cy", Spec: long})  // job 3
	apply(fsm.SubmitLimitsType, fsm.Submit{At: at, Owner: "cy", Spec: short}) // job 4
	now := at.Add(time.Minute)
	got, why := plan(f, now, 2)
	wantStart := at.Add(600*time.Second + planner.KillGrace).UTC().Format(time.RFC3339)
	if len(why) == 0 || !strings.Contains(why[0], "planned start "+wantStart) {
		t.Errorf("got why %q, want the planned start %s", why, wantStart)
	}
	if len(got.Assignments) != 1 || got.Assignments[0].JobID != 4 {
		t.Errorf("got %+v, want only the short job 4 backfilled", got.Assignments)
	}
}

// TestGangPlanDeterministic: replicas that applied the same log, and a new
// leader restored from a snapshot, plan the same Place for a waiting gang.
func TestGangPlanDeterministic(t *testing.T) {
	f1, apply1 := gangState(t, 600)
	f2, apply2 := gangState(t, 600)
	now := at.Add(2 * time.Minute)
	for _, apply := range []func(fsm.MessageType, any) *fsm.Result{apply1, apply2} {
		apply(fsm.ChildTermType, fsm.ChildTerm{At: now, JobID: 1, Instance: 0, Attempt: 1, Machine: "m3"})
	}
	p1, why1 := plan(f1, now, 2)
	p2, why2 := plan(f2, now, 2)
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(why1, why2) {
		t.Errorf("replicas plan differently:\n%+v\n%+v", p1, p2)
	}
	snap, err := f1.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	f3 := fsm.New()
	if err := f3.Restore(nopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	p3, _ := plan(f3, now, 2)
	if !reflect.DeepEqual(p1, p3) || len(p1.Assignments) != 3 {
		t.Errorf("a restored leader plans %+v, want %+v with the gang's three", p3, p1)
	}
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

// nopCloser makes a reader an io.ReadCloser.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// TestGangTooLargeHoldsNothing: a gang larger than every machine that can
// run it could ever hold does not set machines aside; later jobs run.
func TestGangTooLargeHoldsNothing(t *testing.T) {
	f, apply := gangState(t, 0)
	big := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/mpi"}, Min: 4, Gang: true, Unique: true}
	apply(fsm.SubmitGangType, fsm.Submit{At: at, Owner: "bob", Spec: big})                                                        // job 3
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "cy", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1}}) // job 4
	// Job 2, the gang of three, is the head; kill it so job 3 is first.
	apply(fsm.KillType, fsm.Kill{At: at, JobID: 2, By: "bob"})
	got, why := plan(f, at, 3)
	if len(why) == 0 || !strings.Contains(why[0], "the machines that can run it have 3 slots in all") {
		t.Errorf("got why %q, want it to say the gang can never fit", why)
	}
	if len(got.Assignments) != 1 || got.Assignments[0].JobID != 4 {
		t.Errorf("got %+v, want the later job 4 placed", got.Assignments)
	}
}
