package fsm_test

import (
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// leaseFixture runs a restartable and a plain job on m1 (m2 idle).
func leaseFixture(t *testing.T) (a *applier, restartable, plain uint64) {
	t.Helper()
	a = newApplier(t)
	a.join("m1", "x86_64", 4)
	a.join("m2", "x86_64", 4)
	s := spec("r", 1)
	s.Restart = fsm.RestartOnFailure
	restartable = a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
	plain = a.submit("p", 1)
	a.run(restartable, 0, 1, "m1", at(2))
	a.run(plain, 0, 1, "m1", at(2))
	return a, restartable, plain
}

func TestLeaseExpiredRestartsOnlyRestartableWork(t *testing.T) {
	a, r, p := leaseFixture(t)
	res := a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(10), Machine: "m1"})
	if res.Affected != 1 {
		t.Errorf("got Affected %d, want 1 restarted", res.Affected)
	}
	if m := a.machine("m1"); m.State != fsm.MachineUnreachable {
		t.Errorf("machine state %s, want unreachable", m.State)
	}
	in := a.instance(r, 0)
	if in.State != fsm.InstanceQueued || in.Attempt != 2 || in.Restarts != 0 || !in.NotBefore.IsZero() {
		t.Errorf("restartable instance: %s attempt %d restarts %d not before %v, want queued attempt 2, no restart counted, no backoff",
			in.State, in.Attempt, in.Restarts, in.NotBefore)
	}
	if len(in.History) != 1 || in.History[0].State != fsm.InstanceLost || in.History[0].Machine != "m1" {
		t.Errorf("history %+v, want attempt 1 lost on m1", in.History)
	}
	if in := a.instance(p, 0); in.State != fsm.InstanceUnknown || in.Attempt != 1 {
		t.Errorf("plain instance: %s attempt %d, want unknown attempt 1 (never killed)", in.State, in.Attempt)
	}
	// The old attempt's late end is fenced; the plain job's result is kept.
	if res := a.term(r, 0, "m1", 0); !res.Stale {
		t.Errorf("late CHILD_TERM of the expired attempt was not fenced")
	}
	a.term(p, 0, "m1", 0)
	if in := a.instance(p, 0); in.State != fsm.InstanceExited {
		t.Errorf("plain instance after its stub reported: %s, want exited", in.State)
	}
	// Placing the new attempt on the unreachable machine is refused.
	if res := a.place(fsm.Assignment{JobID: r, Instance: 0, Attempt: 2, Machine: "m1", Key: fsm.AnyKey}); len(res.Accepted) != 0 {
		t.Errorf("placed on an unreachable machine: %+v", res.Accepted)
	}
	if res := a.place(fsm.Assignment{JobID: r, Instance: 0, Attempt: 2, Machine: "m2", Key: fsm.AnyKey}); len(res.Accepted) != 1 {
		t.Errorf("new attempt not placed on m2: dropped %d", res.Dropped)
	}
}

func TestLeaseRestoredBringsUnknownBack(t *testing.T) {
	a, _, p := leaseFixture(t)
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(10), Machine: "m1"})
	a.mustOK(fsm.LeaseRestoredType, fsm.LeaseRestored{At: at(11), Machine: "m1",
		Running: []fsm.AttemptRef{{JobID: p, Instance: 0, Attempt: 1}}})
	if m := a.machine("m1"); m.State != fsm.MachineUp {
		t.Errorf("machine state %s, want up", m.State)
	}
	if in := a.instance(p, 0); in.State != fsm.InstanceRunning {
		t.Errorf("plain instance %s, want running again", in.State)
	}
}

func TestStubLeaveWaitsForTheLeaseForRestartableWork(t *testing.T) {
	a, r, p := leaseFixture(t)
	a.leave("m1", "gossip: dead")
	if in := a.instance(r, 0); in.State != fsm.InstanceRunning || in.Attempt != 1 {
		t.Errorf("restartable instance after leave: %s attempt %d, want still attempt 1 until its lease expires", in.State, in.Attempt)
	}
	if in := a.instance(p, 0); in.State != fsm.InstanceLost {
		t.Errorf("plain instance after leave: %s, want lost", in.State)
	}
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(12), Machine: "m1"})
	if in := a.instance(r, 0); in.State != fsm.InstanceQueued || in.Attempt != 2 {
		t.Errorf("restartable instance after expiry: %s attempt %d, want queued attempt 2", in.State, in.Attempt)
	}
}

func TestChildTermForLostLeaseRestarts(t *testing.T) {
	a, r, _ := leaseFixture(t)
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(5), JobID: r, Instance: 0, Attempt: 1, Machine: "m1",
		Signal: "KILL", Reason: "lease expired", LeaseLost: true})
	if in := a.instance(r, 0); in.State != fsm.InstanceQueued || in.Attempt != 2 || in.Restarts != 0 {
		t.Errorf("got %s attempt %d restarts %d, want queued attempt 2 with no restart counted", in.State, in.Attempt, in.Restarts)
	}
}

// TestLeaseRestoredReplacesUnstartedWork: an unknown attempt that never
// registered (its Start may have died with the machine) is placed again
// when the machine is back, so the leader re-sends its Start; one that
// registered and is not reported running waits for its CHILD_TERM.
func TestLeaseRestoredReplacesUnstartedWork(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	started, unstarted := a.submit("started", 1), a.submit("unstarted", 1)
	a.run(started, 0, 1, "m1", at(2))
	a.place(fsm.Assignment{JobID: unstarted, Instance: 0, Attempt: 1, Machine: "m1", Key: fsm.AnyKey})
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(10), Machine: "m1"})
	a.mustOK(fsm.LeaseRestoredType, fsm.LeaseRestored{At: at(11), Machine: "m1"})
	if in := a.instance(unstarted, 0); in.State != fsm.InstancePlaced || in.Attempt != 1 {
		t.Errorf("never-started instance: %s attempt %d, want placed attempt 1 (its Start sent again)", in.State, in.Attempt)
	}
	if in := a.instance(started, 0); in.State != fsm.InstanceUnknown {
		t.Errorf("started instance not reported running: %s, want unknown until its CHILD_TERM", in.State)
	}
}
