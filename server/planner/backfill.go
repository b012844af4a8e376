package planner

import (
	"slices"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// head is the first job in queue order that waits for capacity on
// machines that otherwise match it; later jobs may take that capacity only
// when they will be gone before the head can start.
type head struct {
	job *fsm.Job
	// competing[i] says the head competes for machine i.
	competing []bool
	// need is how many of its instances wait; shadow and known are its
	// planned start (queue.Shadow), worked out on first use (shadowOf):
	// a pass in which nothing else fits the head's machines never needs
	// it, and it costs a look at every instance running on them.
	need   int
	done   bool
	shadow time.Time
	known  bool
}

// elsewhere matches req among the machines the head does not compete for.
func (p *Pass) elsewhere(req matcher.Request) matcher.Result {
	var names []string
	for i, m := range p.machines {
		if !p.head.competing[i] && (len(req.Machines) == 0 || slices.Contains(req.Machines, m.Name)) {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return matcher.Result{Machine: -1}
	}
	req.Machines = names
	return p.matcher.MatchPool(req, p.pool)
}

// waitingFrom is how many instances of j still wait from instance first
// on: this one and the job's later ones (its earlier ones in queue order
// were placed in this pass), not those in restart backoff.
func (p *Pass) waitingFrom(j *fsm.Job, first int) int {
	need := 0
	for i := range j.Instances {
		in := &j.Instances[i]
		if in.State == fsm.InstanceQueued && in.Index >= first && !in.NotBefore.After(p.now) {
			need++
		}
	}
	return need
}

// newHead records the job the queue's later jobs must not delay: the
// machines it competes for, and how many of its instances wait (need).
func (p *Pass) newHead(j *fsm.Job, req matcher.Request, need int) *head {
	h := &head{job: j, competing: make([]bool, len(p.machines)), need: need}
	for _, i := range p.matcher.Candidates(req, p.pool) {
		h.competing[i] = true
	}
	return h
}

// shadowOf is h's planned start: when enough of its machines' busy slots
// will have freed for its waiting instances, judged by the run limits of
// what runs there (queue.Shadow); known is false when that cannot be
// bounded.
func (p *Pass) shadowOf(h *head) (at time.Time, known bool) {
	if h.done {
		return h.shadow, h.known
	}
	byName := make(map[string]bool)
	for i, c := range h.competing {
		if c {
			byName[p.machines[i].Name] = true
		}
	}
	var ends []time.Time
	p.v.EachActive(func(ref fsm.InstanceRef, machine string) bool {
		if !byName[machine] {
			return true
		}
		rj, in, _ := p.v.Instance(ref)
		start := in.StartedAt
		if start.IsZero() {
			start = in.PlacedAt
		}
		ql := p.limits[rj.Queue]
		limit := ql.EffectiveRun(rj.Spec.TimeLimitSeconds)
		if limit > 0 {
			limit += ql.Grace(KillGrace) // a limit ends with TERM, then KILL after the grace
		}
		ends = append(ends, queue.DeclaredEnd(start, limit))
		return true
	})
	// Shadow takes the need-th earliest end, whatever the order of ends.
	h.shadow, h.known = queue.Shadow(h.need, ends)
	h.done = true
	return h.shadow, h.known
}

// mayBackfill reports whether job j, later in queue order than the head,
// may take a machine the head competes for now (queue.MayBackfill).
func (p *Pass) mayBackfill(j *fsm.Job) bool {
	runLimit := p.limits[j.Queue].EffectiveRun(j.Spec.TimeLimitSeconds)
	if runLimit <= 0 {
		return false // never, whatever the shadow: no need to work it out
	}
	shadow, known := p.shadowOf(p.head)
	return queue.MayBackfill(p.now, runLimit, shadow, known)
}

// waitsForCapacity reports whether a failed match failed only for lack of
// capacity on machines that otherwise match: slots, the job's per-machine
// bound, memory. A job kept off by a reservation or by machines that are
// down or asleep is not waiting for capacity, and must not hold the queue.
func waitsForCapacity(res matcher.Result) bool {
	if res.Matching == 0 {
		return false
	}
	for _, r := range res.Rejections {
		switch r.Filter {
		case matcher.FilterReservation, matcher.FilterUp, matcher.FilterAwake:
			return false
		}
	}
	return true
}

// behindHead is the Held reason of a job kept off the head's machines.
func (p *Pass) behindHead() string {
	return "waiting behind job " + p.head.job.Name + " (" + strconv.FormatUint(p.head.job.ID, 10) +
		"), first in queue order, for the machines it needs"
}
