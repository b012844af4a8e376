package planner

import (
	"fmt"
	"maps"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// unrunnable says why no machine of the pool can run the job c submits,
// whatever the machines' state now (busy, down, asleep or reserved
// machines that meet its requirements count as able): the matcher's
// reason, such as "3 machines lack key sparc", or "" when some machine
// meets every requirement. It reads v only, and of each machine only what
// the requirement filters read: a submit pays no more than that per
// machine.
//
// A gang must also fit all at once: when the matching machines' slots
// (within the job's per-machine bound) are fewer than its instances, it
// says so.
func unrunnable(v fsm.View, live map[string]Liveness, c fsm.Submit) string {
	if c.Spec.Gang && c.Spec.Min > 1 {
		return gangUnrunnable(v, live, c)
	}
	if unconstrained(&c.Spec) && v.MachineCount() > 0 {
		return "" // any machine of the pool can run it: no need to look
	}
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

// gangUnrunnable is unrunnable for a gang: the matcher's reason when no
// machine meets its requirements, else why the ones that do cannot hold
// all its instances at once.
func gangUnrunnable(v fsm.View, live map[string]Liveness, c fsm.Submit) string {
	ms := v.Machines()
	views := make([]matcher.MachineView, len(ms))
	for i, m := range ms {
		views[i] = requirementView(m, live[m.Name])
	}
	req := matchRequest(&fsm.Job{Owner: c.Owner, Spec: c.Spec}, &fsm.Instance{})
	mt := matcher.New()
	if res := mt.Match(req, views); res.Matching == 0 {
		return res.Why()
	}
	pool := matcher.NewPool(views)
	slots := 0
	candidates := mt.Candidates(req, pool)
	for _, i := range candidates {
		n := views[i].Slots
		if limit := c.Spec.PerMachineLimit(); limit > 0 {
			n = min(n, limit)
		}
		slots += n
	}
	if slots >= c.Spec.Min {
		return ""
	}
	return fmt.Sprintf("a gang of %d needs %d slots at once; the %d machines that can run it have %d", c.Spec.Min, c.Spec.Min, len(candidates), slots)
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

// unconstrained reports whether spec asks nothing of a machine that one
// of the pool could lack: its binaries are for any machine, and it names
// no keys, mounts, machines, memory or attribute requirements. The
// check at submit then costs nothing for the common job.
func unconstrained(s *fsm.JobSpec) bool {
	for k := range s.Binaries {
		if k != fsm.AnyKey {
			return false
		}
	}
	return len(s.Keys) == 0 && len(s.Mounts) == 0 && len(s.Machines) == 0 && s.MemoryMB == 0 && len(s.Requirements) == 0
}

// needsLiveness reports whether unrunnable reads the liveness map for
// spec: only a requirement on the idle attribute (idle>=MINUTES) does.
func needsLiveness(s *fsm.JobSpec) bool {
	for _, r := range s.Requirements {
		if r.Attr == IdleAttr {
			return true
		}
	}
	return false
}
