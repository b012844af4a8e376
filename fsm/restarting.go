package fsm

import "fmt"

// applyStubRestarting marks an up machine restarting: its stub is
// stopping to start again, and its jobs run on under the supervisor host.
// Its instances are left as they are (running stays running), and it
// takes no new work (Machine.Usable). Only an up machine may restart: one
// whose lease expired has had its restartable work started elsewhere, so
// its stub must not be granted a longer lease; the leader answers such a
// stub without one, and it leaves the pool instead.
func (d *db) applyStubRestarting(index uint64, c *StubRestarting) *Result {
	m, ok := d.machines[c.Machine]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("machine restarting of %s: %w", c.Machine, ErrNoSuchMachine)}
	}
	switch m.State {
	case MachineRestarting:
		return &Result{Index: index}
	case MachineUp:
	default:
		return &Result{Index: index, Err: fmt.Errorf("machine restarting of %s, which is %s: %w", c.Machine, m.State, ErrNotUp)}
	}
	m.State = MachineRestarting
	d.touchMachine(m, index)
	d.event(index, c.At, EventMachineRestarting, 0, -1, 0, c.Machine, "stub restarting; its jobs run on")
	return &Result{Index: index}
}
