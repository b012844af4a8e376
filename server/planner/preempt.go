package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// Preemption (fsm/preempt.go has the rules Apply keeps). A pass over a
// database with a preempting queue (add_q preempt=) notes the first job
// in queue order of such a queue whose instances wait for capacity (the
// preemptor); Preemption then picks, for each of its waiting instances
// in turn (all of a gang's, or none), the machine where the fewest
// victims make room, then the one whose victims have the lowest queue
// priority, then the first machine. Victims are running instances of
// strictly lower-priority queues, tried on each machine lowest priority
// first, then newest job first, then highest instance; a gang victim
// counts with all its instances and is taken whole; for requeue only a
// restartable job's instance is one. Whether a victim makes room is the
// matcher's answer on that machine with the victims' slot, memory, CPUs,
// GPUs, gres and disk given back. A preemptor whose earlier victims are
// still stopping (requeue) is not given more: `netstatus --why` says it
// waits for them; nor is one that still waits with victims suspended for
// it (a job of higher order took their slots), so that a plan the next
// pass does not follow never suspends the whole pool. Every group of victims is checked with the FSM's own
// rule (View.MayPreempt) so a Preempt entry is never dropped whole and
// proposed again on every pass.
//
// Resumes come first in a pass: a job whose lent (suspended) instances'
// preemptor has ended is continued when View.MayResume says each fits its
// machine again, and its slots are taken from the pass's pool so the
// pass's Place does not hand them to another job.

// preemptor is the job a pass found waiting for capacity in a preempting
// queue, with its waiting instances.
type preemptor struct {
	job       *fsm.Job
	instances []*fsm.Instance
}

// victim is one running instance a preemptor may stop.
type victim struct {
	job      *fsm.Job
	in       *fsm.Instance
	priority int
	machine  int // index in the pass's pool
}

// preempting reports whether some queue preempts and holds waiting work.
func preempting(v fsm.View) bool {
	for _, q := range v.Queues() {
		if q.Preempt != "" && q.Waiting > 0 {
			return true
		}
	}
	return false
}

// notePreemptor records j as the pass's preemptor when it is the first
// job of a preempting queue to wait for capacity.
func (p *Pass) notePreemptor(j *fsm.Job, in *fsm.Instance) {
	if p.want != nil && p.want.job.ID != j.ID {
		return
	}
	if p.modes[j.Queue] == "" {
		return
	}
	if p.want == nil {
		p.want = &preemptor{job: j}
	}
	p.want.instances = append(p.want.instances, in)
}

// stopping counts, per preemptor, its requeue victims not yet ended;
// lent counts its suspended ones.
func (p *Pass) stopping() (stops, lent map[uint64]int) {
	if p.stops != nil {
		return p.stops, p.lent
	}
	p.stops, p.lent = map[uint64]int{}, map[uint64]int{}
	p.v.EachActive(func(ref fsm.InstanceRef, _ string) bool {
		if _, in, ok := p.v.Instance(ref); ok && in.Preempt == fsm.PreemptRequeue {
			p.stops[in.PreemptedBy]++
		} else if ok && in.Lent() {
			p.lent[in.PreemptedBy]++
		}
		return true
	})
	return p.stops, p.lent
}

// stoppingHeld is the Held reason of a preemptor whose victims are still
// stopping, nil when it has none.
func (p *Pass) stoppingHeld(j *fsm.Job) *Held {
	if !p.preempts || p.modes[j.Queue] == "" {
		return nil
	}
	if stops, _ := p.stopping(); stops[j.ID] > 0 {
		return &Held{Reason: fmt.Sprintf("preempting: waiting for %d instance(s) of lower-priority queues to stop (their kill grace, then SIGKILL)", stops[j.ID])}
	}
	return nil
}

// Preemption returns the Preempt the pass decided, after Place ran: the
// victims that make room for the pass's preemptor, and false when there
// is none or no victim would make room.
func (p *Pass) Preemption() (fsm.Preempt, bool) {
	w := p.want
	if w == nil {
		return fsm.Preempt{}, false
	}
	// Victims still stopping, or suspended for it while it still waits
	// (something of higher order took their slots): no more, so that a
	// plan the next pass does not follow never suspends the pool away.
	if stops, lent := p.stopping(); stops[w.job.ID] > 0 || lent[w.job.ID] > 0 {
		return fsm.Preempt{}, false
	}
	mode := p.modes[w.job.Queue]
	prio := p.limits[w.job.Queue].Priority
	byMachine := p.victims(w.job, prio, mode)
	if len(byMachine) == 0 {
		return fsm.Preempt{}, false
	}
	freed := map[*fsm.Instance]bool{}
	took := map[int][]matcher.Request{}
	var chosen []victim
	for _, in := range w.instances {
		req, ok := p.restrict(w.job, matchRequest(w.job, in))
		if !ok {
			break
		}
		best, bestCost := -1, 0
		var bestVictims []victim
		for i := range p.machines {
			cost, vs, ok := p.makeRoom(i, req, byMachine[i], freed, took[i])
			if !ok {
				continue
			}
			if best < 0 || cmp.Or(cmp.Compare(cost, bestCost), compareVictims(vs, bestVictims)) < 0 {
				best, bestCost, bestVictims = i, cost, vs
			}
		}
		if best < 0 {
			if w.job.Spec.Gang {
				return fsm.Preempt{}, false // a gang needs room for all or none
			}
			break
		}
		took[best] = append(took[best], req)
		for _, v := range bestVictims {
			for _, x := range p.unit(v, byMachine) {
				if !freed[x.in] {
					freed[x.in] = true
					chosen = append(chosen, x)
				}
			}
		}
	}
	if len(chosen) == 0 {
		return fsm.Preempt{}, false
	}
	slices.SortStableFunc(chosen, func(a, b victim) int {
		return cmp.Or(cmp.Compare(a.job.ID, b.job.ID), cmp.Compare(a.in.Index, b.in.Index))
	})
	out := fsm.Preempt{Preemptor: w.job.ID}
	for _, v := range chosen {
		out.Victims = append(out.Victims, fsm.Victim{JobID: v.job.ID, Instance: v.in.Index, Attempt: v.in.Attempt})
	}
	return out, true
}

// victims lists, per machine of the pool, the running instances a job of
// priority prio may stop in mode, in the order they are tried: lowest
// queue priority, newest job, highest instance first. A job's instances
// are victims only if the FSM would take the job's group (View.MayPreempt:
// for a gang, every active instance).
func (p *Pass) victims(j *fsm.Job, prio int, mode string) map[int][]victim {
	index := make(map[string]int, len(p.machines))
	for i, m := range p.machines {
		index[m.Name] = i
	}
	byJob := map[uint64][]victim{}
	p.v.EachActive(func(ref fsm.InstanceRef, machine string) bool {
		vj, in, ok := p.v.Instance(ref)
		if !ok || in.State != fsm.InstanceRunning || vj.ID == j.ID {
			return true
		}
		q := p.limits[vj.Queue]
		if q.Priority >= prio || mode == fsm.PreemptRequeue && !vj.Spec.Restartable() {
			return true
		}
		i, ok := index[machine]
		if !ok {
			return true
		}
		byJob[vj.ID] = append(byJob[vj.ID], victim{job: vj, in: in, priority: q.Priority, machine: i})
		return true
	})
	out := map[int][]victim{}
	for _, id := range slices.Sorted(maps.Keys(byJob)) {
		vs := byJob[id]
		slices.SortFunc(vs, func(a, b victim) int { return cmp.Compare(a.in.Index, b.in.Index) })
		group := make([]fsm.Victim, len(vs))
		for k, v := range vs {
			group[k] = fsm.Victim{JobID: id, Instance: v.in.Index, Attempt: v.in.Attempt}
		}
		if !vs[0].job.Spec.Gang {
			// Each instance is its own group: keep those the FSM takes.
			for k, v := range vs {
				if p.v.MayPreempt(j.ID, group[k:k+1]) {
					out[v.machine] = append(out[v.machine], v)
				}
			}
			continue
		}
		if p.v.MayPreempt(j.ID, group) {
			for _, v := range vs {
				out[v.machine] = append(out[v.machine], v)
			}
		}
	}
	for i := range out {
		slices.SortFunc(out[i], func(a, b victim) int {
			return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(b.job.ID, a.job.ID), cmp.Compare(b.in.Index, a.in.Index))
		})
	}
	return out
}

// unit is the victims stopping v stops: v, or every instance of its gang.
func (p *Pass) unit(v victim, byMachine map[int][]victim) []victim {
	if !v.job.Spec.Gang {
		return []victim{v}
	}
	var out []victim
	for _, m := range slices.Sorted(maps.Keys(byMachine)) {
		for _, x := range byMachine[m] {
			if x.job.ID == v.job.ID {
				out = append(out, x)
			}
		}
	}
	return out
}

// makeRoom reports how many more victims machine i must give up for req
// to match there, given the victims already freed anywhere and the
// preemptor's instances already placed there (took): the fewest, in the
// order vs lists them, and which. A gang victim counts with every
// instance it has.
func (p *Pass) makeRoom(i int, req matcher.Request, vs []victim, freed map[*fsm.Instance]bool, took []matcher.Request) (int, []victim, bool) {
	base := p.pool.Machine(i)
	base.JobCounts = maps.Clone(base.JobCounts)
	base.GPUs = slices.Clone(base.GPUs)
	base.UsedGres = maps.Clone(base.UsedGres)
	for _, v := range vs {
		if freed[v.in] {
			giveBack(&base, v)
		}
	}
	var pending []victim
	cost := 0
	gone := map[*fsm.Instance]bool{}
	for k := -1; k < len(vs); k++ {
		if k >= 0 {
			v := vs[k]
			if freed[v.in] || gone[v.in] {
				continue
			}
			if !v.job.Spec.Gang {
				giveBack(&base, v)
				gone[v.in] = true
				pending = append(pending, v)
				cost++
			} else {
				// The whole gang goes: its instances here give back now,
				// the others where they run.
				for _, x := range vs {
					if x.job.ID == v.job.ID && !freed[x.in] && !gone[x.in] {
						giveBack(&base, x)
						gone[x.in] = true
					}
				}
				pending = append(pending, v)
				cost += len(v.job.Instances)
			}
		}
		if p.fits(base, req, took) {
			return cost, pending, true
		}
	}
	return 0, nil, false
}

// fits reports whether req matches machine view m with took placed there
// first.
func (p *Pass) fits(m matcher.MachineView, req matcher.Request, took []matcher.Request) bool {
	pool := matcher.NewPool([]matcher.MachineView{m})
	for _, r := range took {
		pool.Take(0, r)
	}
	return p.matcher.MatchPool(req, pool).Machine == 0
}

// giveBack returns what victim v holds to its machine's view m.
func giveBack(m *matcher.MachineView, v victim) {
	s := &v.job.Spec
	m.Running--
	m.UsedCPUs -= s.CPUsPerInstance()
	m.UsedMemoryMB -= s.MemoryMB
	m.ImposedLoad -= loadOf(s)
	m.UsedDiskMB -= s.DiskMB
	if m.JobCounts[v.job.ID]--; m.JobCounts[v.job.ID] <= 0 {
		delete(m.JobCounts, v.job.ID)
	}
	for name, n := range s.Gres {
		m.UsedGres[name] -= n
	}
	for _, g := range v.in.GPUs {
		if g >= 0 && g < len(m.GPUs) {
			m.GPUs[g].Used = false
		}
	}
}

// compareVictims orders two machines' sets of victims of equal count:
// the one whose first (lowest priority, newest) victim has the lower
// priority, then the newer job, then the higher instance goes first; an
// empty set (no victim needed there) before any.
func compareVictims(a, b []victim) int {
	switch {
	case len(a) == 0 || len(b) == 0:
		return cmp.Compare(len(a), len(b))
	}
	x, y := a[0], b[0]
	return cmp.Or(cmp.Compare(x.priority, y.priority), cmp.Compare(y.job.ID, x.job.ID), cmp.Compare(y.in.Index, x.in.Index))
}

// Resumes returns the Preempts with Resume the pass decides, one per job
// whose lent instances' preemptor has ended and which fit their machines
// again, and takes their slots from the pass's pool. Call it before
// Place.
func (p *Pass) Resumes() []fsm.Preempt {
	if p.v.LentCount() == 0 {
		return nil
	}
	byJob := map[uint64][]fsm.Victim{}
	p.v.EachActive(func(ref fsm.InstanceRef, _ string) bool {
		if _, in, ok := p.v.Instance(ref); ok && in.Lent() {
			byJob[ref.JobID] = append(byJob[ref.JobID], fsm.Victim{JobID: ref.JobID, Instance: in.Index, Attempt: in.Attempt})
		}
		return true
	})
	index := make(map[string]int, len(p.machines))
	for i, m := range p.machines {
		index[m.Name] = i
	}
	var out []fsm.Preempt
	for _, id := range slices.Sorted(maps.Keys(byJob)) {
		group := byJob[id]
		slices.SortFunc(group, func(a, b fsm.Victim) int { return cmp.Compare(a.Instance, b.Instance) })
		if !p.v.MayResume(group) {
			continue
		}
		j, _ := p.v.Job(id)
		for _, g := range group {
			in := &j.Instances[g.Instance]
			if i, ok := index[in.Machine]; ok {
				p.pool.Take(i, matchRequest(j, in))
			}
		}
		out = append(out, fsm.Preempt{Resume: true, Victims: group})
	}
	if len(out) > 0 {
		p.free = p.anyFree()
	}
	return out
}

// anyFree reports whether some machine of the pool is up, awake and has
// a free slot.
func (p *Pass) anyFree() bool {
	for i := 0; i < p.pool.Len(); i++ {
		m := p.pool.Machine(i)
		if m.Up && m.Awake && m.Running < m.Slots {
			return true
		}
	}
	return false
}
