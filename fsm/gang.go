package fsm

import (
	"fmt"
	"time"
)

// A gang job (JobSpec.Gang) runs all its instances at once or none of
// them: placeGang applies a Place's assignments of the job only when there
// is one for every instance and every one holds, and an instance that
// fails or loses its machine breaks the gang (breakGang): the others are
// stopped, and with a restart policy every instance starts again as a new
// attempt. The planner places a gang only when every instance is queued
// and due, so a new attempt is never placed while an old attempt of any
// instance may still run: the fencing of single instances, for the whole
// gang.

// placeGang applies the assignments of gang job j in c, all or none: one
// per instance, each placeable with the earlier ones counted as taken.
func (d *db) placeGang(index uint64, c *Place, j *Job, res *Result) {
	var as []Assignment
	for _, a := range c.Assignments {
		if a.JobID == j.ID {
			as = append(as, a)
		}
	}
	if !d.gangPlaceable(j, as, c.At) {
		res.Dropped += len(as)
		return
	}
	for _, a := range as {
		d.place(index, c.At, a)
		res.Accepted = append(res.Accepted, a)
	}
}

// gangPlaceable reports whether as places every instance of j exactly
// once and each assignment holds with the earlier ones applied.
func (d *db) gangPlaceable(j *Job, as []Assignment, at time.Time) bool {
	if len(as) != len(j.Instances) {
		return false
	}
	seen := make([]bool, len(j.Instances))
	t := &taken{running: make(map[string]int), memory: make(map[string]int64)}
	for _, a := range as {
		if a.Instance < 0 || a.Instance >= len(seen) || seen[a.Instance] {
			return false
		}
		seen[a.Instance] = true
		if !d.placeable(a, at, t) {
			return false
		}
		t.running[a.Machine]++
		t.memory[a.Machine] += j.Spec.MemoryMB
		t.active++
		t.take(j, a.Machine)
	}
	return true
}

// gangEnd decides, when an attempt of instance ended of gang job j has
// ended (or been declared lost or unknown), what becomes of the rest of
// the gang. An end asked for (a kill, a restart, the gang's own stop)
// decides nothing more. An instance queued again (a restart policy, a
// lost lease) starts the whole gang again; any other end but a clean
// exit stops the others.
func (d *db) gangEnd(j *Job, ended *Instance, asked bool, index uint64, at time.Time) {
	if !j.Spec.Gang || j.KillRequested || asked {
		return
	}
	switch ended.State {
	case InstanceQueued:
		d.breakGang(j, ended, true, index, at)
	case InstanceExited:
	default:
		d.breakGang(j, ended, false, index, at)
	}
}

// breakGang stops every instance of j but ended: an active one is
// signalled (its restart or kill owed, as netmgr restart and netkill do),
// a waiting one is dequeued. With restart, each starts again as a new
// attempt: an active one when its end is committed, a finished one now.
func (d *db) breakGang(j *Job, ended *Instance, restart bool, index uint64, at time.Time) {
	signalled := 0
	for i := range j.Instances {
		in := &j.Instances[i]
		if in == ended {
			continue
		}
		switch {
		case in.Active() && restart:
			if !in.RestartRequested && !in.KillRequested {
				in.RestartRequested = true
				in.ModifyIndex = index
				signalled++
			}
		case in.Active():
			if !in.KillRequested {
				in.KillRequested = true
				in.ModifyIndex = index
				signalled++
			}
		case in.Finished() && restart:
			d.newAttempt(j, in, at, 0, index)
		case in.State == InstanceQueued && !restart:
			in.EndedAt = at
			d.setState(j.ID, in, InstanceKilled, index)
			d.event(index, at, EventInstanceKilled, j.ID, in.Index, in.Attempt, "", "dequeued: gang stopped")
		}
	}
	if signalled > 0 {
		d.owedSends++ // owed the restart or kill signal
	}
	what := "stopped"
	if restart {
		what = "starting again"
	}
	j.ModifyIndex = index
	d.event(index, at, EventGangBroken, j.ID, ended.Index, ended.Attempt, "",
		fmt.Sprintf("instance %d ended %s: gang %s, %d other instance(s) signalled", ended.Index, ended.State, what, signalled))
}
