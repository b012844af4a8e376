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

// schedule runs one scheduling pass: it orders the queued instances, asks
// the matcher for a machine for each against one pool whose running counts
// grow as it assigns, and commits all assignments in one Place.
func (s *Server) schedule() error {
	pool := s.gossip.snapshot()
	var plan fsm.Place
	s.fsm.Read(func(v fsm.View) {
		queued := v.Queued()
		if len(queued) == 0 {
			return
		}
		machines := v.Machines()
		views := make([]matcher.MachineView, len(machines))
		for i, m := range machines {
			views[i] = machineView(m, v.Running(m.Name), pool[m.Name])
		}
		p := matcher.NewPool(views)
		mt := matcher.New()

		items := make([]queue.Item, 0, len(queued))
		for _, ref := range queued {
			j, _, _ := v.Instance(ref)
			items = append(items, queue.Item{JobID: ref.JobID, Instance: ref.Instance, SubmitIndex: j.CreateIndex})
		}
		queue.Order(items)
		for _, it := range items {
			j, in, _ := v.Instance(fsm.InstanceRef{JobID: it.JobID, Instance: it.Instance})
			keys := slices.Sorted(maps.Keys(j.Spec.Binaries))
			res := mt.MatchPool(matcher.Request{JobID: j.ID, Instance: in.Index, BinaryKeys: keys}, p)
			if res.Machine < 0 {
				continue
			}
			p.Take(res.Machine)
			plan.Assignments = append(plan.Assignments, fsm.Assignment{
				JobID: j.ID, Instance: in.Index, Attempt: in.Attempt,
				Machine: machines[res.Machine].Name, Key: res.Key,
			})
		}
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

// machineView is what the matcher sees of a machine: the database's facts
// and counts, with liveness and load from gossip.
func machineView(m *fsm.Machine, running int, g member) matcher.MachineView {
	keys := append([]string{m.Arch}, m.Keys...)
	slices.Sort(keys)
	return matcher.MachineView{
		Name:    m.Name,
		Keys:    slices.Compact(keys),
		Up:      m.State == fsm.MachineUp && g.Alive && g.Meta.Role == client.RoleStub,
		Slots:   m.Slots(),
		Running: running,
		Load:    g.Meta.Load,
		Rating:  1,
	}
}
