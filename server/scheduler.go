package server

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// schedule runs one scheduling pass and commits what it places in one
// Place command.
func (s *Server) schedule() error {
	var plan fsm.Place
	s.fsm.Read(func(v fsm.View) {
		p := s.newPlanner(v, time.Now())
		p.run(func(it queue.Item, in *fsm.Instance, res matcher.Result) {
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
	if res.Dropped > 0 {
		s.log.Info("placement re-check dropped assignments", "dropped", res.Dropped, "accepted", len(res.Accepted))
	}
	return nil
}

// planner is one scheduling pass over a consistent view: the queued
// instances in queue order, matched one by one against a pool whose counts
// grow as it assigns. The scheduler and `netstatus --why` share it, so the
// explanation is the scheduler's own reasoning.
type planner struct {
	v        fsm.View
	now      time.Time
	machines []*fsm.Machine
	pool     *matcher.Pool
	matcher  *matcher.Matcher
}

func (s *Server) newPlanner(v fsm.View, now time.Time) *planner {
	gossip := s.gossip.snapshot()
	machines := v.Machines()
	views := make([]matcher.MachineView, len(machines))
	for i, m := range machines {
		views[i] = machineView(v, m, gossip[m.Name])
	}
	return &planner{v: v, now: now, machines: machines, pool: matcher.NewPool(views), matcher: matcher.New()}
}

// waiting is a queued instance held back by restart backoff.
var waiting = matcher.Result{Machine: -1}

// run calls visit for every queued instance in queue order with the
// matcher's answer; a placed instance is taken from the pool before the
// next is matched. An instance in restart backoff gets Machine -1 and no
// rejections.
func (p *planner) run(visit func(queue.Item, *fsm.Instance, matcher.Result)) {
	queued := p.v.Queued()
	items := make([]queue.Item, 0, len(queued))
	for _, ref := range queued {
		j, _, _ := p.v.Instance(ref)
		items = append(items, queue.Item{JobID: ref.JobID, Instance: ref.Instance, SubmitIndex: j.CreateIndex})
	}
	queue.Order(items)
	// Within one pass capacity only shrinks, so once an instance of a job
	// finds no machine, its later instances find none either: reuse the
	// answer instead of matching them all again.
	unplaceable := make(map[uint64]matcher.Result)
	for _, it := range items {
		j, in, _ := p.v.Instance(fsm.InstanceRef{JobID: it.JobID, Instance: it.Instance})
		if in.NotBefore.After(p.now) {
			visit(it, in, waiting)
			continue
		}
		if res, ok := unplaceable[j.ID]; ok {
			visit(it, in, res)
			continue
		}
		req := matchRequest(j, in)
		res := p.matcher.MatchPool(req, p.pool)
		if res.Machine >= 0 {
			p.pool.Take(res.Machine, req)
		} else {
			unplaceable[j.ID] = res
		}
		visit(it, in, res)
	}
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
// effective attributes and counts, with liveness and load from gossip.
func machineView(v fsm.View, m *fsm.Machine, g member) matcher.MachineView {
	e := m.Effective()
	counts := v.JobCounts(m.Name)
	imposed := 0.0
	for _, id := range slices.Sorted(maps.Keys(counts)) { // float sums depend on order
		if j, ok := v.Job(id); ok {
			imposed += float64(counts[id]) * loadOf(&j.Spec)
		}
	}
	return matcher.MachineView{
		Name:         m.Name,
		Keys:         e.Keys,
		Attrs:        e.Attrs,
		Mounts:       e.Mounts,
		Up:           m.Accepts() && g.Alive && g.Meta.Role == client.RoleStub,
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
