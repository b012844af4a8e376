package fsm

// applyPlace re-checks every assignment against the state at apply time and
// applies only those that still hold: the job is not being killed, the
// instance is queued at that attempt, the machine is up with a free slot
// and has the binary's key. The rest are dropped, so a stale or duplicated
// plan can neither overcommit a machine nor start an instance twice.
func (d *db) applyPlace(index uint64, c *Place) *Result {
	res := &Result{Index: index}
	for _, a := range c.Assignments {
		if !d.placeable(a) {
			res.Dropped++
			continue
		}
		j, in, _ := d.instance(a.JobID, a.Instance)
		in.Machine = a.Machine
		in.Key = a.Key
		in.PlacedAt = c.At
		d.setState(j.ID, in, InstancePlaced, index)
		j.ModifyIndex = index
		res.Accepted = append(res.Accepted, a)
	}
	return res
}

func (d *db) placeable(a Assignment) bool {
	j, in, err := d.instance(a.JobID, a.Instance)
	if err != nil || j.KillRequested {
		return false
	}
	if in.State != InstanceQueued || in.Attempt != a.Attempt {
		return false
	}
	m, ok := d.machines[a.Machine]
	if !ok || m.State != MachineUp || d.running[m.Name] >= m.Slots() {
		return false
	}
	if _, ok := j.Spec.Binaries[a.Key]; !ok {
		return false
	}
	return m.HasKey(a.Key)
}
