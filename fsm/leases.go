package fsm

import "fmt"

// applyLeaseExpired handles a machine whose lease ran out. Its stub has
// stopped the attempts of restartable jobs (it kills them when its lease
// runs out, before the leader may declare it expired), so each gets a new
// attempt, placed anywhere, the old one fenced by its attempt number. The
// other instances are never killed for being unreachable: they become
// unknown. A machine restarting work is not the job's failure, so this does
// not count against max_restarts.
func (d *db) applyLeaseExpired(index uint64, c *LeaseExpired) *Result {
	m, ok := d.machines[c.Machine]
	if !ok {
		return &Result{Index: index}
	}
	if m.State == MachineUp || m.State == MachineRestarting {
		m.State = MachineUnreachable
		d.touchMachine(m, index)
		d.event(index, c.At, EventMachineUnreachable, 0, -1, 0, c.Machine, "lease expired")
	}
	res := &Result{Index: index}
	for _, ref := range sortedRefs(d.active) {
		if d.active[ref] != c.Machine {
			continue
		}
		j, in, _ := d.instance(ref.JobID, ref.Instance)
		d.edit(j)
		switch {
		case j.KillRequested:
			// Being killed: its end is the stub's to report, or lost.
			d.setState(j.ID, in, InstanceUnknown, index)
			d.event(index, c.At, EventInstanceUnknown, j.ID, in.Index, in.Attempt, c.Machine, "lease expired while being killed")
		case j.Spec.Restartable():
			in.Error = "the lease of machine " + c.Machine + " expired"
			in.EndedAt = c.At
			d.setState(j.ID, in, InstanceLost, index) // as the history records it
			d.event(index, c.At, EventInstanceLost, j.ID, in.Index, in.Attempt, c.Machine, in.Error)
			asked := in.endAsked()
			d.newAttempt(j, in, c.At, 0, index)
			d.gangEnd(j, in, asked, index, c.At)
			res.Affected++
		default:
			asked := in.endAsked() || in.State == InstanceUnknown
			d.setState(j.ID, in, InstanceUnknown, index)
			d.event(index, c.At, EventInstanceUnknown, j.ID, in.Index, in.Attempt, c.Machine, "lease expired; not restartable")
			d.gangEnd(j, in, asked, index, c.At)
		}
		j.ModifyIndex = index
	}
	return res
}

// applyLeaseRestored brings an unreachable machine back: its stub renews
// its lease again. Unknown instances it reports running are running again.
// An unknown instance that never registered was placed but may never have
// reached the stub (its Start lost with the machine): it goes back to
// placed, so the leader sends its Start again, which a stub that did start
// it ignores. The others wait for the CHILD_TERM the stub's outbox holds.
func (d *db) applyLeaseRestored(index uint64, c *LeaseRestored) *Result {
	m, ok := d.machines[c.Machine]
	if !ok || m.State != MachineUnreachable {
		return &Result{Index: index}
	}
	m.State = MachineUp
	d.touchMachine(m, index)
	d.event(index, c.At, EventMachineBack, 0, -1, 0, c.Machine, "lease renewed")
	running := make(map[AttemptRef]bool, len(c.Running))
	for _, a := range c.Running {
		running[a] = true
	}
	for _, ref := range sortedRefs(d.active) {
		if d.active[ref] != c.Machine {
			continue
		}
		j, in, _ := d.instance(ref.JobID, ref.Instance)
		if in.State != InstanceUnknown {
			continue
		}
		d.edit(j)
		switch {
		case running[AttemptRef{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt}] && in.Preempt == PreemptSuspend:
			// Suspended for a preemptor when its lease expired: still
			// stopped there, and lent again until it is resumed.
			d.setState(j.ID, in, InstanceSuspended, index)
			d.event(index, c.At, EventInstanceStarted, j.ID, in.Index, in.Attempt, c.Machine, fmt.Sprintf("back, still suspended for job %d", in.PreemptedBy))
		case running[AttemptRef{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt}]:
			d.setState(j.ID, in, InstanceRunning, index)
			d.event(index, c.At, EventInstanceStarted, j.ID, in.Index, in.Attempt, c.Machine, "running again")
		case in.StartedAt.IsZero():
			d.setState(j.ID, in, InstancePlaced, index)
			d.event(index, c.At, EventInstancePlaced, j.ID, in.Index, in.Attempt, c.Machine, "never started: Start sent again")
		default:
			continue
		}
		j.ModifyIndex = index
	}
	return &Result{Index: index}
}
