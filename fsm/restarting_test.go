package fsm_test

import (
	"errors"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// TestStubRestartingKeepsInstances: a restarting machine's instances stay
// running, it takes no new work, their ends are recorded as usual, a
// StubJoin brings it up again, and the state survives a snapshot.
func TestStubRestartingKeepsInstances(t *testing.T) {
	a, r, p := leaseFixture(t)
	a.mustOK(fsm.StubRestartingType, fsm.StubRestarting{At: at(5), Machine: "m1"})
	if m := a.machine("m1"); m.State != fsm.MachineRestarting || m.Usable() {
		t.Errorf("machine %s usable %v, want restarting and not usable", m.State, m.Usable())
	}
	for _, job := range []uint64{r, p} {
		if in := a.instance(job, 0); in.State != fsm.InstanceRunning || in.Attempt != 1 {
			t.Errorf("job %d: %s attempt %d, want running attempt 1", job, in.State, in.Attempt)
		}
	}
	// A second request changes nothing.
	a.mustOK(fsm.StubRestartingType, fsm.StubRestarting{At: at(6), Machine: "m1"})

	back := restored(t, snapshotBytes(t, a.f))
	var state string
	back.Read(func(v fsm.View) {
		m, _ := v.Machine("m1")
		state = m.State
	})
	if state != fsm.MachineRestarting {
		t.Errorf("restored machine state %q, want restarting", state)
	}

	// The new stub reports an end, then joins again.
	a.term(p, 0, "m1", 0)
	if in := a.instance(p, 0); in.State != fsm.InstanceExited {
		t.Errorf("plain job after its end: %s, want exited", in.State)
	}
	a.join("m1", "x86_64", 4)
	if m := a.machine("m1"); m.State != fsm.MachineUp {
		t.Errorf("machine after StubJoin: %s, want up", m.State)
	}
	if in := a.instance(r, 0); in.State != fsm.InstanceRunning || in.Attempt != 1 {
		t.Errorf("restartable job after the restart: %s attempt %d, want running attempt 1", in.State, in.Attempt)
	}
}

// TestStubRestartingExpires: a restart lease that runs out is a lease
// expiry, as for a lost machine.
func TestStubRestartingExpires(t *testing.T) {
	a, r, p := leaseFixture(t)
	a.mustOK(fsm.StubRestartingType, fsm.StubRestarting{At: at(5), Machine: "m1"})
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(200), Machine: "m1"})
	if m := a.machine("m1"); m.State != fsm.MachineUnreachable {
		t.Errorf("machine %s, want unreachable", m.State)
	}
	if in := a.instance(r, 0); in.State != fsm.InstanceQueued || in.Attempt != 2 {
		t.Errorf("restartable: %s attempt %d, want queued attempt 2", in.State, in.Attempt)
	}
	if in := a.instance(p, 0); in.State != fsm.InstanceUnknown {
		t.Errorf("plain: %s, want unknown", in.State)
	}
}

// TestStubRestartingRefused: only an up machine may restart: one whose
// lease expired must not get a longer lease, and an unknown one is an
// error.
func TestStubRestartingRefused(t *testing.T) {
	a, _, _ := leaseFixture(t)
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(10), Machine: "m1"})
	if res := a.apply(fsm.StubRestartingType, fsm.StubRestarting{At: at(11), Machine: "m1"}); !errors.Is(res.Err, fsm.ErrNotUp) {
		t.Errorf("restarting an unreachable machine: %v, want ErrNotUp", res.Err)
	}
	if m := a.machine("m1"); m.State != fsm.MachineUnreachable {
		t.Errorf("machine %s, want still unreachable", m.State)
	}
	if res := a.apply(fsm.StubRestartingType, fsm.StubRestarting{At: at(11), Machine: "nosuch"}); !errors.Is(res.Err, fsm.ErrNoSuchMachine) {
		t.Errorf("restarting an unknown machine: %v, want ErrNoSuchMachine", res.Err)
	}
}
