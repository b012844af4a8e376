package server

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// schedule runs one scheduling pass and commits what it places in one
// Place command.
func (s *Server) schedule() error {
	start, placed := time.Now(), 0
	defer func() { s.metrics.schedulePass(start, placed) }()
	var plan fsm.Place
	s.fsm.Read(func(v fsm.View) {
		if v.QueuedCount() == 0 {
			return // most commits (CHILD events) leave nothing to place
		}
		p := s.newPlanner(v, time.Now())
		if !p.free {
			return // every machine is full, down or draining: nothing can start
		}
		p.run(func(it queue.Item, in *fsm.Instance, res matcher.Result, _ *held) {
			if res.Machine < 0 {
				return
			}
			plan.Assignments = append(plan.Assignments, fsm.Assignment{
				JobID: it.JobID, Instance: in.Index, Attempt: in.Attempt,
				Machine: p.machines[res.Machine].Name, Key: res.Key,
			})
		})
		plan.PlannedAtIndex = v.Index()
	})
	if len(plan.Assignments) == 0 {
		return nil
	}
	plan.At = time.Now().UTC()
	res, err := s.apply(fsm.PlaceType, plan)
	if err != nil {
		return fmt.Errorf("commit placement: %w", err)
	}
	placed = len(res.Accepted)
	if res.Dropped > 0 {
		s.log.Info("placement re-check dropped assignments", "dropped", res.Dropped, "accepted", len(res.Accepted))
	}
	return nil
}

// planner is one scheduling pass over a consistent view: the queued
// instances in queue order (queue priority, then submit order), admitted
// under each queue's nq_maxactive, matched one by one against a pool whose
// counts grow as it assigns, with EASY backfill around the head job. The
// scheduler and `netstatus --why` share it, so the explanation is the
// scheduler's own reasoning.
type planner struct {
	v        fsm.View
	now      time.Time
	machines []*fsm.Machine
	pool     *matcher.Pool
	matcher  *matcher.Matcher
	active   *queue.Active
	limits   map[string]queue.Limits
	head     *head
	// free reports that some machine is up, awake and has a free slot.
	// Without one no instance can be placed, and the scheduler, which runs
	// after every commit, skips the pass (a full pool with a long queue
	// would otherwise match every queued job again on every commit).
	free bool
}

// head is the first job in queue order that waits for capacity on
// machines that otherwise match it; later jobs may take that capacity only
// when they will be gone before the head can start.
type head struct {
	job       *fsm.Job
	competing map[int]bool
	shadow    time.Time
	known     bool
}

func (s *Server) newPlanner(v fsm.View, now time.Time) *planner {
	return newPlannerFrom(v, s.pool(now), now)
}

// newPlannerFrom is newPlanner with the gossip pool given (PlanPass
// fabricates one).
func newPlannerFrom(v fsm.View, gossip map[string]member, now time.Time) *planner {
	machines := v.Machines()
	views := make([]matcher.MachineView, len(machines))
	free := false
	for i, m := range machines {
		views[i] = machineView(v, m, gossip[m.Name], now)
		free = free || (views[i].Up && views[i].Awake && views[i].Running < views[i].Slots)
	}
	limits := make(map[string]queue.Limits)
	running := make(map[string]int)
	for _, q := range v.Queues() {
		limits[q.Name] = q.Limits()
		running[q.Name] = q.Active
	}
	return &planner{
		v: v, now: now, machines: machines, free: free,
		pool: matcher.NewPool(views), matcher: matcher.New(),
		active: queue.NewActive(limits, running), limits: limits,
	}
}

// waiting is the result the planner reports for a queued instance it did
// not ask the matcher about: held back by restart backoff or by a held
// reason (which Why explains).
var waiting = matcher.Result{Machine: -1}

// held is an instance the planner kept from a machine for a reason of its
// own: its queue's nq_maxactive, or the head job's claim.
type held struct{ reason string }

// run calls visit for every queued instance in queue order with the
// matcher's answer (or a held reason); a placed instance is taken from the
// pool before the next is matched.
func (p *planner) run(visit func(queue.Item, *fsm.Instance, matcher.Result, *held)) {
	queued := p.v.Queued()
	items := make([]queue.Item, 0, len(queued))
	for _, ref := range queued {
		j, _, _ := p.v.Instance(ref)
		items = append(items, queue.Item{
			JobID: ref.JobID, Instance: ref.Instance, SubmitIndex: j.CreateIndex,
			Priority: p.limits[j.Queue].Priority,
		})
	}
	queue.Order(items)
	// Within one pass capacity only shrinks, so once an instance of a job
	// finds no machine, its later instances find none either: reuse the
	// answer instead of matching them all again.
	stuck := make(map[uint64]func(*fsm.Instance))
	for _, it := range items {
		j, in, _ := p.v.Instance(fsm.InstanceRef{JobID: it.JobID, Instance: it.Instance})
		if in.NotBefore.After(p.now) {
			visit(it, in, waiting, nil)
			continue
		}
		if again, ok := stuck[j.ID]; ok {
			again(in)
			continue
		}
		if !p.active.Admit(j.Queue) {
			h := &held{reason: p.active.Reason(j.Queue)}
			stuck[j.ID] = func(in *fsm.Instance) { visit(it, in, waiting, h) }
			visit(it, in, waiting, h)
			continue
		}
		req := matchRequest(j, in)
		res := p.matcher.MatchPool(req, p.pool)
		if res.Machine >= 0 && p.head != nil && p.head.job.ID != j.ID && p.head.competing[res.Machine] &&
			!queue.MayBackfill(p.now, p.limits[j.Queue].RunLimit(), p.head.shadow, p.head.known) {
			res = p.elsewhere(req)
			if res.Machine < 0 {
				h := &held{reason: p.behindHead()}
				stuck[j.ID] = func(in *fsm.Instance) { visit(it, in, waiting, h) }
				visit(it, in, waiting, h)
				continue
			}
		}
		if res.Machine < 0 {
			stuck[j.ID] = func(in *fsm.Instance) { visit(it, in, res, nil) }
			if p.head == nil && waitsForCapacity(res) {
				p.head = p.newHead(j, req, it)
			}
			visit(it, in, res, nil)
			continue
		}
		p.pool.Take(res.Machine, req)
		p.active.Take(j.Queue)
		visit(it, in, res, nil)
	}
}

// elsewhere matches req among the machines the head does not compete for.
func (p *planner) elsewhere(req matcher.Request) matcher.Result {
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

// newHead records the job the queue's later jobs must not delay: the
// machines it competes for, and when enough of their busy slots will have
// freed for its waiting instances, judged by the run limits of what runs
// there.
func (p *planner) newHead(j *fsm.Job, req matcher.Request, first queue.Item) *head {
	h := &head{job: j, competing: make(map[int]bool)}
	byName := make(map[string]bool)
	for _, i := range p.matcher.Candidates(req, p.pool) {
		h.competing[i] = true
		byName[p.machines[i].Name] = true
	}
	// The instances still waiting: this one and the job's later ones (its
	// earlier ones in queue order were placed in this pass), not those in
	// restart backoff.
	need := 0
	for i := range j.Instances {
		in := &j.Instances[i]
		if in.State == fsm.InstanceQueued && in.Index >= first.Instance && !in.NotBefore.After(p.now) {
			need++
		}
	}
	var ends []time.Time
	for _, ref := range p.v.Active() {
		rj, in, _ := p.v.Instance(ref)
		if !byName[in.Machine] {
			continue
		}
		start := in.StartedAt
		if start.IsZero() {
			start = in.PlacedAt
		}
		limit := p.limits[rj.Queue].RunLimit()
		if limit > 0 {
			limit += killGrace // a limit ends with TERM, then KILL after the grace
		}
		ends = append(ends, queue.DeclaredEnd(start, limit))
	}
	h.shadow, h.known = queue.Shadow(need, ends)
	return h
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

func (p *planner) behindHead() string {
	return "waiting behind job " + p.head.job.Name + " (" + strconv.FormatUint(p.head.job.ID, 10) +
		"), first in queue order, for the machines it needs"
}

// matchRequest is what the matcher needs to know of one instance.
func matchRequest(j *fsm.Job, in *fsm.Instance) matcher.Request {
	req := matcher.Request{
		JobID:         j.ID,
		Instance:      in.Index,
		Owner:         j.Owner,
		BinaryKeys:    slices.Sorted(maps.Keys(j.Spec.Binaries)),
		Keys:          j.Spec.Keys,
		Mounts:        j.Spec.Mounts,
		Machines:      j.Spec.Machines,
		MaxPerMachine: j.Spec.PerMachineLimit(),
		MemoryMB:      j.Spec.MemoryMB,
		Load:          j.Spec.Load,
	}
	for _, r := range j.Spec.Requirements {
		req.Requirements = append(req.Requirements, matcher.Requirement{Attr: r.Attr, Op: r.Op, Value: r.Value})
	}
	return req
}

// machineView is what the matcher sees of a machine: the database's
// effective attributes and counts, the reservation in force now, with
// liveness and load from gossip.
func machineView(v fsm.View, m *fsm.Machine, g member, now time.Time) matcher.MachineView {
	e := m.Effective()
	counts := v.JobCounts(m.Name)
	imposed := 0.0
	for _, id := range slices.Sorted(maps.Keys(counts)) { // float sums depend on order
		if j, ok := v.Job(id); ok {
			imposed += float64(counts[id]) * loadOf(&j.Spec)
		}
	}
	reservedBy, _ := v.ReservedBy(m.Name, now)
	return matcher.MachineView{
		Name:         m.Name,
		ReservedBy:   reservedBy,
		Keys:         e.Keys,
		Attrs:        e.Attrs,
		Mounts:       e.Mounts,
		Up:           m.Accepts() && g.Alive && !g.Suspect && g.Meta.Role == client.RoleStub,
		Awake:        true,
		Slots:        m.Slots(),
		Running:      v.Running(m.Name),
		Load:         g.Meta.Load,
		Rating:       e.Rating,
		MemoryMB:     e.MemoryMB,
		UsedMemoryMB: v.UsedMemoryMB(m.Name),
		ImposedLoad:  imposed,
		JobCounts:    counts,
	}
}

// loadOf is the load one instance of the job imposes: its load= factor,
// one busy CPU by default.
func loadOf(s *fsm.JobSpec) float64 {
	if s.Load > 0 {
		return s.Load
	}
	return 1
}
