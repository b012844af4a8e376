package planner

import (
	"fmt"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// gang plans gang job j, whose queued instances in this pass are items
// (consecutive in queue order): all of them, matched one by one against
// the pool, or none, the pool left as it was. A gang waits while any
// instance's previous attempt may still run (the FSM places it only when
// every instance is queued) or is in restart backoff. A gang that waits for
// capacity becomes the head when none is yet: the machines it competes
// for are then set aside as they free up, and later jobs backfill there
// only when they end before its planned start (the shadow, for the slots
// it needs beyond those free now). Every instance gets the same Held
// reason, which says how many slots the gang needs at once and how many
// could run it now.
func (p *Pass) gang(j *fsm.Job, items []queue.Item, visit func(queue.Item, *fsm.Instance, matcher.Result, *Held)) {
	n := len(j.Instances)
	hold := func(reason string, capacity bool) {
		h := &Held{Reason: fmt.Sprintf("gang of %d: %s", n, reason), capacity: capacity}
		for _, it := range items {
			_, in, _ := p.v.Instance(fsm.InstanceRef{JobID: it.JobID, Instance: it.Instance})
			visit(it, in, waiting, h)
		}
	}
	wait := func(reason string) { hold(reason, false) }
	if len(items) != n {
		wait(fmt.Sprintf("waiting for the previous attempt of %d instance(s) to end", n-len(items)))
		return
	}
	var due time.Time
	for i := range j.Instances {
		if nb := j.Instances[i].NotBefore; nb.After(p.now) && nb.After(due) {
			due = nb
		}
	}
	if !due.IsZero() {
		wait("restarting after a backoff until " + due.UTC().Format(time.RFC3339))
		return
	}
	if h := p.licenses.held(j, n); h != nil {
		wait(h.Reason)
		return
	}
	if limit := p.limits[j.Queue].MaxActive; limit > 0 && int64(p.active.Running(j.Queue)+n) > limit {
		wait(fmt.Sprintf("queue %s runs %d of at most %d instances (nq_maxactive), too few left for all at once",
			j.Queue, p.active.Running(j.Queue), limit))
		return
	}
	if limit := p.limits[j.Queue].MaxUserActive; limit > 0 && !p.admit(j) || limit > 0 && int64(p.active.UserRunning(j.Queue, j.Owner)+n) > limit {
		wait(fmt.Sprintf("user %s runs %d of at most %d instances in queue %s (nq_maxuser_active), too few left for all at once",
			j.Owner, p.active.UserRunning(j.Queue, j.Owner), limit, j.Queue))
		return
	}
	var (
		reqs   []matcher.Request
		placed []matcher.Result
		failed matcher.Result
		behind bool
	)
	for _, it := range items {
		_, in, _ := p.v.Instance(fsm.InstanceRef{JobID: it.JobID, Instance: it.Instance})
		req, ok := p.restrict(j, matchRequest(j, in))
		if !ok {
			wait(p.dedicatedReason(j))
			for k := range placed {
				p.pool.Release(placed[k].Machine, reqs[k])
			}
			return
		}
		res := p.matcher.MatchPool(req, p.pool)
		if res.Machine >= 0 && p.head != nil && p.head.competing[res.Machine] && !p.mayBackfill(j) {
			res = p.elsewhere(req)
			behind = res.Machine < 0
		}
		if res.Machine < 0 {
			failed = res
			break
		}
		p.pool.Take(res.Machine, req)
		reqs = append(reqs, req)
		placed = append(placed, res)
	}
	if len(placed) == n {
		p.licenses.take(j, n)
		for k, it := range items {
			p.owners.take(placed[k].Machine, j, p.limits, 1)
			_, in, _ := p.v.Instance(fsm.InstanceRef{JobID: it.JobID, Instance: it.Instance})
			p.active.TakeUser(j.Queue, j.Owner)
			visit(it, in, placed[k], nil)
		}
		return
	}
	for k := range placed {
		p.pool.Release(placed[k].Machine, reqs[k])
	}
	if h := p.stoppingHeld(j); h != nil {
		wait(h.Reason)
		return
	}
	now := len(placed)
	reason := fmt.Sprintf("needs %d machine slots at once, %d could run it now", n, now)
	_, first, _ := p.v.Instance(fsm.InstanceRef{JobID: items[0].JobID, Instance: items[0].Instance})
	switch {
	case behind:
		wait(reason + "; " + p.behindHead())
		return
	case waitsForCapacity(failed) && p.capacity(j, matchRequest(j, first)) < n:
		// It would wait forever: it must not hold machines for itself.
		wait(reason + fmt.Sprintf("; the machines that can run it have %d slots in all", p.capacity(j, matchRequest(j, first))))
		return
	case p.head == nil && waitsForCapacity(failed) && p.mayLead(j.Queue):
		p.head = p.newHead(j, matchRequest(j, first), n-now)
	}
	if p.head != nil && p.head.job.ID == j.ID {
		if shadow, known := p.shadowOf(p.head); known {
			reason += "; planned start " + shadow.UTC().Format(time.RFC3339) +
				", machines set aside for it as they free"
		} else {
			reason += "; machines set aside for it as they free (no planned start: what runs there has no run limit)"
		}
		hold(reason, true)
		return
	}
	hold(reason+"; "+failed.Why(), waitsForCapacity(failed))
}

// capacity is how many instances of j the machines that meet req's
// requirements could hold at once were they empty: their slots (and
// CPUs, GPUs, gres and disk, instancesFit), each within the job's
// per-machine bound.
func (p *Pass) capacity(j *fsm.Job, req matcher.Request) int {
	total := 0
	for _, i := range p.matcher.Candidates(req, p.pool) {
		n := instancesFit(p.pool.Machine(i), req)
		if limit := j.Spec.PerMachineLimit(); limit > 0 {
			n = min(n, limit)
		}
		total += n
	}
	return total
}
