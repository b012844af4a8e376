package fsm

import (
	"fmt"
	"time"
)

// Preemption (DeclaredQueue.Preempt, add_q's preempt=): a job of a
// preempting queue that waits on a full pool takes slots from running
// instances of strictly lower-priority queues. The leader's planner picks
// the victims (server/planner/preempt.go); one Preempt entry decides it,
// so it happens once and every replica agrees, and Apply re-checks every
// victim against the state it meets (drops what no longer holds: an
// attempt that ended, a queue whose priority changed, a job being killed).
//
//   - requeue: each victim is owed its stop (its warning signal or
//     SIGTERM, the queue's kill grace, SIGKILL; the dispatcher's restart
//     path). Its CHILD_TERM ends the attempt preempted (InstancePreempted,
//     Reason "preempted by job N") and queues the next attempt at once,
//     with no restart counted. Only a restartable job's instance is a
//     victim. The preemptor waits, placed by the next pass after the ends
//     commit, so no two attempts of an instance ever overlap.
//   - suspend: each victim is suspended in the same entry (SIGSTOP, as
//     netmgr suspend) and lends its slot, memory, CPUs, GPUs and licences
//     to the preemptor: a lent instance (Instance.lent) stays active in its
//     queue's counts but not in its machine's. When its preemptor has
//     ended (or left the database), the planner proposes a Preempt with
//     Resume, which continues it (SIGCONT) only if everything it held is
//     free again, all of a job's lent instances or none; until then it
//     stays stopped.
//
// A gang victim is preempted and resumed whole: every active instance of
// the job is named, or Apply takes none of them.

// Preempt modes (DeclaredQueue.Preempt).
const (
	PreemptRequeue = "requeue"
	PreemptSuspend = "suspend"
)

// validPreempt reports whether p is a preempt mode ("" is none).
func validPreempt(p string) bool {
	return p == "" || p == PreemptRequeue || p == PreemptSuspend
}

// Preempt (PreemptType, level 44) stops Victims for job Preemptor in the
// way its queue's preempt= says, or, with Resume, continues suspended
// victims whose preemptor has ended.
type Preempt struct {
	At        time.Time `json:"at"`
	Preemptor uint64    `json:"preemptor,omitempty"`
	Resume    bool      `json:"resume,omitempty"`
	// Victims are the attempts, grouped by job; a gang job's are all its
	// active instances.
	Victims []Victim `json:"victims"`
}

// Victim names one attempt a Preempt stops or resumes.
type Victim struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
}

// lent reports whether the instance is suspended for a preemptor and so
// lends it what it held on its machine.
func (in *Instance) lent() bool {
	return in.State == InstanceSuspended && in.Preempt == PreemptSuspend
}

// Lent reports whether the instance is suspended for its PreemptedBy job.
func (in *Instance) Lent() bool { return in.lent() }

// endAsked reports whether the attempt's end was asked for: netkill, a
// restart, or a preemption that queues it again.
func (in *Instance) endAsked() bool {
	return in.KillRequested || in.RestartRequested || in.Preempt == PreemptRequeue
}

func (d *db) applyPreempt(index uint64, c *Preempt) *Result {
	if c.Resume {
		return d.resumePreempted(index, c)
	}
	res := &Result{Index: index, JobID: c.Preemptor}
	p, ok := d.jobs[c.Preemptor]
	if !ok || p.KillRequested {
		res.Dropped = len(c.Victims)
		return res
	}
	pq, _ := d.queueLimits(p.Queue)
	if pq.Preempt == "" {
		res.Dropped = len(c.Victims)
		return res
	}
	var taken []Victim
	for _, group := range victimGroups(c.Victims) {
		j := d.jobs[group[0].JobID]
		if !d.mayPreempt(p, pq, j, group) {
			res.Dropped += len(group)
			continue
		}
		taken = append(taken, group...)
		d.edit(j)
		for _, v := range group {
			in := &j.Instances[v.Instance]
			in.PreemptedBy, in.Preempt = p.ID, pq.Preempt
			detail := fmt.Sprintf("preempted by job %d (queue %s, priority %d): ", p.ID, p.Queue, pq.Priority)
			if pq.Preempt == PreemptSuspend {
				in.SuspendIndex = index
				d.setState(j.ID, in, InstanceSuspended, index)
				detail += "suspended until it ends"
			} else {
				in.ModifyIndex = index
				detail += "stopping, then queued again"
			}
			d.event(index, c.At, EventInstancePreempted, j.ID, in.Index, in.Attempt, in.Machine, detail)
			res.Affected++
		}
		j.ModifyIndex = index
	}
	if res.Affected > 0 {
		d.owedSends++ // owed the stop or SIGSTOP
		d.edit(p)
		p.ModifyIndex = index
		d.event(index, c.At, EventJobPreempting, p.ID, -1, 0, "",
			fmt.Sprintf("%d instance(s) of lower-priority queues preempted (%s): %s", res.Affected, pq.Preempt, victimList(taken)))
	}
	return res
}

// mayPreempt reports whether preemptor p (of queue pq) may take the
// attempts of group, all of job j: each is current and running, not
// already preempted or asked to end, j's queue has a strictly lower
// priority, j is restartable when the victim is queued again, and a gang
// is named whole.
func (d *db) mayPreempt(p *Job, pq DeclaredQueue, j *Job, group []Victim) bool {
	if j == nil || j.ID == p.ID || j.KillRequested {
		return false
	}
	jq, _ := d.queueLimits(j.Queue)
	if jq.Priority >= pq.Priority || pq.Preempt == PreemptRequeue && !j.Spec.Restartable() {
		return false
	}
	seen := make([]bool, len(j.Instances))
	for _, v := range group {
		if v.Instance < 0 || v.Instance >= len(j.Instances) || seen[v.Instance] {
			return false
		}
		seen[v.Instance] = true
		in := &j.Instances[v.Instance]
		if in.Attempt != v.Attempt || in.State != InstanceRunning || in.Preempt != "" || in.endAsked() {
			return false
		}
	}
	if j.Spec.Gang {
		for i := range j.Instances {
			if j.Instances[i].Active() && !seen[i] {
				return false
			}
		}
	}
	return true
}

// resumePreempted continues the lent instances c names, each job's all
// or none: their preemptor has ended or left the database, and each
// machine has room again for what they held.
func (d *db) resumePreempted(index uint64, c *Preempt) *Result {
	res := &Result{Index: index}
	for _, group := range victimGroups(c.Victims) {
		j := d.jobs[group[0].JobID]
		if !d.mayResume(j, group) {
			res.Dropped += len(group)
			continue
		}
		d.edit(j)
		for _, v := range group {
			in := &j.Instances[v.Instance]
			by := in.PreemptedBy
			d.unsetIndexes(j.ID, in)
			in.Preempt, in.PreemptedBy = "", 0
			d.setIndexes(j.ID, in)
			in.ResumeIndex = index
			d.setState(j.ID, in, InstanceRunning, index)
			d.event(index, c.At, EventInstanceResumed, j.ID, in.Index, in.Attempt, in.Machine, fmt.Sprintf("job %d ended: continued", by))
			res.Affected++
		}
		j.ModifyIndex = index
	}
	if res.Affected > 0 {
		d.owedSends++ // owed SIGCONT
	}
	return res
}

// mayResume reports whether group, all of job j, names lent attempts
// whose preemptor has ended, every one of j's lent instances, and each
// fits its machine again, counted with the group's earlier ones (the
// groups before it in the entry are already applied).
func (d *db) mayResume(j *Job, group []Victim) bool {
	if j == nil {
		return false
	}
	seen := make([]bool, len(j.Instances))
	for _, v := range group {
		if v.Instance < 0 || v.Instance >= len(j.Instances) || seen[v.Instance] {
			return false
		}
		seen[v.Instance] = true
		in := &j.Instances[v.Instance]
		if in.Attempt != v.Attempt || !in.lent() || !d.preemptorEnded(in.PreemptedBy) {
			return false
		}
	}
	for i := range j.Instances {
		if j.Instances[i].lent() && !seen[i] {
			return false
		}
	}
	t := &taken{running: map[string]int{}, memory: map[string]int64{}}
	for _, v := range group {
		in := &j.Instances[v.Instance]
		m, ok := d.machines[in.Machine]
		if !ok || m.State != MachineUp || d.running[m.Name]+t.running[m.Name] >= m.Slots() || !d.resourcesFit(j, m, t) {
			return false
		}
		if need := j.Spec.MemoryMB; need > 0 && d.usedMemory[m.Name]+t.memory[m.Name]+need > m.eff.MemoryMB {
			return false
		}
		if u := d.usage[m.Name]; u != nil {
			for _, g := range in.GPUs {
				if g >= 0 && g < MaxGPUs && u.gpus&(1<<uint(g)) != 0 {
					return false // its GPU went to another job
				}
			}
		}
		t.running[m.Name]++
		t.memory[m.Name] += j.Spec.MemoryMB
		t.take(j, m.Name)
		t.licenses++
	}
	return true
}

// preemptorEnded reports whether job id, a preemptor, has ended: it left
// the database or none of its instances waits or is active.
func (d *db) preemptorEnded(id uint64) bool {
	p, ok := d.jobs[id]
	if !ok {
		return true
	}
	for i := range p.Instances {
		if in := &p.Instances[i]; in.State == InstanceQueued || in.Active() {
			return false
		}
	}
	return true
}

// LentCount is how many instances are suspended for a preemptor.
func (v View) LentCount() int { return v.d.lent }

// MayPreempt reports whether a Preempt of job preemptor applied now would
// take group, the attempts of one job, as Apply checks it.
func (v View) MayPreempt(preemptor uint64, group []Victim) bool {
	p, ok := v.d.jobs[preemptor]
	if !ok || p.KillRequested || len(group) == 0 {
		return false
	}
	pq, _ := v.d.queueLimits(p.Queue)
	return pq.Preempt != "" && v.d.mayPreempt(p, pq, v.d.jobs[group[0].JobID], group)
}

// MayResume reports whether a Preempt with Resume applied now would
// continue group, the lent attempts of one job, as Apply checks it.
func (v View) MayResume(group []Victim) bool {
	return len(group) > 0 && v.d.mayResume(v.d.jobs[group[0].JobID], group)
}

// victimGroups splits victims into runs of one job each, in order; a job
// named in two runs is two groups (and its second is dropped: its
// instances are no longer running or lent the same way).
func victimGroups(vs []Victim) [][]Victim {
	var out [][]Victim
	for i := 0; i < len(vs); {
		end := i + 1
		for end < len(vs) && vs[end].JobID == vs[i].JobID {
			end++
		}
		out = append(out, vs[i:end])
		i = end
	}
	return out
}

// victimList names the victims for an event: job/instance, at most 8.
func victimList(vs []Victim) string {
	s := ""
	for i, v := range vs {
		if i == 8 {
			return s + fmt.Sprintf(" and %d more", len(vs)-8)
		}
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d/%d", v.JobID, v.Instance)
	}
	return s
}
