package planner

import (
	"maps"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// Unrunnable says why no machine of the pool can run the job c submits,
// whatever the machines' state now (busy, down, asleep or reserved
// machines that meet its requirements count as able): the matcher's
// reason, such as "3 machines lack key sparc", or "" when some machine
// meets every requirement. It reads v only, and of each machine only what
// the requirement filters read: a submit pays no more than that per
// machine.
func Unrunnable(v fsm.View, live map[string]Liveness, c fsm.Submit, now time.Time) string {
	ms := v.Machines()
	views := make([]matcher.MachineView, len(ms))
	for i, m := range ms {
		views[i] = requirementView(m, live[m.Name])
	}
	res := matcher.New().Match(matchRequest(&fsm.Job{Owner: c.Owner, Spec: c.Spec}, &fsm.Instance{}), views)
	if res.Matching > 0 {
		return ""
	}
	return res.Why()
}

// requirementView is what the requirement filters see of a machine (its
// name, keys, attributes with the idle minutes, mounts), with the state
// filters' fields set so that it passes them; machineView is the whole.
func requirementView(m *fsm.Machine, l Liveness) matcher.MachineView {
	e := m.Effective()
	attrs := e.Attrs
	if l.HasIdle {
		attrs = maps.Clone(attrs)
		if attrs == nil {
			attrs = map[string]float64{}
		}
		attrs[IdleAttr] = l.IdleMinutes
	}
	return matcher.MachineView{
		Name:     m.Name,
		Keys:     e.Keys,
		Attrs:    attrs,
		Mounts:   e.Mounts,
		Up:       true,
		Awake:    true,
		Slots:    max(m.Slots(), 1),
		Rating:   e.Rating,
		MemoryMB: e.MemoryMB,
	}
}
