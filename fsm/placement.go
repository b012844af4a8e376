package fsm

import "time"

// applyPlace re-checks every assignment against the state at apply time and
// applies only those that still hold: the job is not being killed, the
// instance is queued at that attempt, the machine is up and not draining,
// has a free slot, room under the job's per-machine bound and enough
// memory, and has the binary's key. The rest are dropped, so a stale or
// duplicated plan can neither overcommit a machine nor start an instance
// twice. It also enforces the job's queue's nq_maxactive and
// nq_maxuser_active and the
// reservations in force at the command's time. Matching requirements (keys, attributes, mounts) is the leader's
// job and is not re-checked. A gang job's assignments are applied all
// or none (placeGang).
func (d *db) applyPlace(index uint64, c *Place) *Result {
	res := &Result{Index: index}
	var gangs []uint64 // gang jobs already decided in this Place
	for _, a := range c.Assignments {
		if j, ok := d.jobs[a.JobID]; ok && j.Spec.Gang {
			if !containsID(gangs, j.ID) {
				gangs = append(gangs, j.ID)
				d.placeGang(index, c, j, res)
			}
			continue
		}
		if !d.placeable(a, c.At, nil) {
			res.Dropped++
			continue
		}
		d.place(index, c.At, a)
		res.Accepted = append(res.Accepted, a)
	}
	return res
}

// place records one checked assignment.
func (d *db) place(index uint64, at time.Time, a Assignment) {
	j, in, _ := d.instance(a.JobID, a.Instance)
	in.Machine = a.Machine
	in.Key = a.Key
	in.PlacedAt = at
	d.setState(j.ID, in, InstancePlaced, index)
	d.event(index, at, EventInstancePlaced, j.ID, in.Index, in.Attempt, a.Machine, "key="+a.Key)
	j.ModifyIndex = index
}

// taken is what the earlier assignments of a gang being checked would
// take, so that its later assignments are checked as if they had been
// applied: slots and memory per machine, the gang's instances per
// machine, and its queue's active count.
type taken struct {
	running map[string]int
	memory  map[string]int64
	active  int
}

func (d *db) placeable(a Assignment, at time.Time, t *taken) bool {
	j, in, err := d.instance(a.JobID, a.Instance)
	if err != nil || j.KillRequested {
		return false
	}
	if in.State != InstanceQueued || in.Attempt != a.Attempt || in.NotBefore.After(at) {
		return false
	}
	var running, active int
	var memory int64
	if t != nil {
		running, memory, active = t.running[a.Machine], t.memory[a.Machine], t.active
	}
	m, ok := d.machines[a.Machine]
	if !ok || !m.Accepts() || d.running[m.Name]+running >= m.Slots() {
		return false
	}
	if limit := j.Spec.PerMachineLimit(); limit > 0 && d.perJob[m.Name][j.ID]+running >= limit {
		return false
	}
	if need := j.Spec.MemoryMB; need > 0 && d.usedMemory[m.Name]+memory+need > m.eff.MemoryMB {
		return false
	}
	if q, ok := d.queueLimits(j.Queue); ok && q.MaxActive > 0 && int64(d.counts(j.Queue).Active+active) >= q.MaxActive {
		return false
	}
	if q, ok := d.queueLimits(j.Queue); ok && q.MaxUserActive > 0 && int64(d.userCounts(j.Queue, j.Owner).Active+active) >= q.MaxUserActive {
		return false
	}
	if owner, ok := d.reservedBy(m.Name, at); ok && owner != j.Owner {
		return false
	}
	if !d.dedicatedAllows(m.Name, j) {
		return false
	}
	if _, ok := j.Spec.Binaries[a.Key]; !ok {
		return false
	}
	return m.HasKey(a.Key)
}

// containsID reports whether ids holds id.
func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// dedicatedAllows reports whether machine may take an instance of j under
// the dedicated placement policy (space sharing): a job of a dedicated
// queue only where every active instance is its owner's, any job only
// where no dedicated queue's job of another owner is active. The answer
// does not depend on the order the machine's jobs are visited in.
func (d *db) dedicatedAllows(machine string, j *Job) bool {
	if len(d.perJob[machine]) == 0 || !d.anyDedicated() {
		return true
	}
	dedicated := d.dedicatedQueue(j.Queue)
	for id, n := range d.perJob[machine] {
		other, ok := d.jobs[id]
		if n <= 0 || !ok || other.Owner == j.Owner {
			continue
		}
		if dedicated || d.dedicatedQueue(other.Queue) {
			return false
		}
	}
	return true
}

// anyDedicated reports whether some declared queue is dedicated, so a
// pool without one pays a scan of its few queues and nothing more.
func (d *db) anyDedicated() bool {
	for _, q := range d.database.Queues {
		if q.Policy == queuePolicyDedicated {
			return true
		}
	}
	return false
}

// dedicatedQueue reports whether queue's placement policy is dedicated.
func (d *db) dedicatedQueue(queue string) bool {
	q, ok := d.queueLimits(queue)
	return ok && q.Policy == queuePolicyDedicated
}
