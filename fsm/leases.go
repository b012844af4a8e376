package fsm

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
	if m.State == MachineUp {
		m.State = MachineUnreachable
		m.ModifyIndex = index
		d.event(index, c.At, EventMachineUnreachable, 0, -1, 0, c.Machine, "lease expired")
	}
	res := &Result{Index: index}
	for _, ref := range sortedRefs(d.active) {
		if d.active[ref] != c.Machine {
			continue
		}
		j, in, _ := d.instance(ref.JobID, ref.Instance)
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
			d.newAttempt(j, in, c.At, 0, index)
			res.Affected++
		default:
			d.setState(j.ID, in, InstanceUnknown, index)
			d.event(index, c.At, EventInstanceUnknown, j.ID, in.Index, in.Attempt, c.Machine, "lease expired; not restartable")
		}
		j.ModifyIndex = index
	}
	return res
}

// applyLeaseRestored brings an unreachable machine back: its stub renews
// its lease again. Unknown instances it reports running are running again;
// the others wait for the CHILD_TERM its outbox still holds.
func (d *db) applyLeaseRestored(index uint64, c *LeaseRestored) *Result {
	m, ok := d.machines[c.Machine]
	if !ok || m.State != MachineUnreachable {
		return &Result{Index: index}
	}
	m.State = MachineUp
	m.ModifyIndex = index
	d.event(index, c.At, EventMachineBack, 0, -1, 0, c.Machine, "lease renewed")
	for _, a := range c.Running {
		j, in, err := d.instance(a.JobID, a.Instance)
		if err != nil || in.Attempt != a.Attempt || in.Machine != c.Machine || in.State != InstanceUnknown {
			continue
		}
		d.setState(j.ID, in, InstanceRunning, index)
		d.event(index, c.At, EventInstanceStarted, j.ID, in.Index, in.Attempt, c.Machine, "running again")
		j.ModifyIndex = index
	}
	return &Result{Index: index}
}
