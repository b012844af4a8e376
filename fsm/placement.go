package fsm

import "time"

// applyPlace re-checks every assignment against the state at apply time and
// applies only those that still hold: the job is not being killed, the
// instance is queued at that attempt, the machine is up and not draining,
// has a free slot, room under the job's per-machine bound and enough
// memory, and has the binary's key. The rest are dropped, so a stale or
// duplicated plan can neither overcommit a machine nor start an instance
// twice. It also enforces the job's queue's nq_maxactive and the
// reservations in force at the command's time. Matching requirements (keys, attributes, mounts) is the leader's
// job and is not re-checked.
func (d *db) applyPlace(index uint64, c *Place) *Result {
	res := &Result{Index: index}
	for _, a := range c.Assignments {
		if !d.placeable(a, c.At) {
			res.Dropped++
			continue
		}
		j, in, _ := d.instance(a.JobID, a.Instance)
		in.Machine = a.Machine
		in.Key = a.Key
		in.PlacedAt = c.At
		d.setState(j.ID, in, InstancePlaced, index)
		d.event(index, c.At, EventInstancePlaced, j.ID, in.Index, in.Attempt, a.Machine, "key="+a.Key)
		j.ModifyIndex = index
		res.Accepted = append(res.Accepted, a)
	}
	return res
}

func (d *db) placeable(a Assignment, at time.Time) bool {
	j, in, err := d.instance(a.JobID, a.Instance)
	if err != nil || j.KillRequested {
		return false
	}
	if in.State != InstanceQueued || in.Attempt != a.Attempt || in.NotBefore.After(at) {
		return false
	}
	m, ok := d.machines[a.Machine]
	if !ok || !m.Accepts() || d.running[m.Name] >= m.Slots() {
		return false
	}
	if limit := j.Spec.PerMachineLimit(); limit > 0 && d.perJob[m.Name][j.ID] >= limit {
		return false
	}
	if need := j.Spec.MemoryMB; need > 0 && d.usedMemory[m.Name]+need > m.eff.MemoryMB {
		return false
	}
	if q, ok := d.queueLimits(j.Queue); ok && q.MaxActive > 0 && int64(d.counts(j.Queue).Active) >= q.MaxActive {
		return false
	}
	if owner, ok := d.reservedBy(m.Name, at); ok && owner != j.Owner {
		return false
	}
	if _, ok := j.Spec.Binaries[a.Key]; !ok {
		return false
	}
	return m.HasKey(a.Key)
}
