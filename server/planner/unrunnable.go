package planner

import (
	"fmt"
	"maps"
	"slices"

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
	if why := licensesUnrunnable(v, &c.Spec); why != "" {
		return why
	}
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
	// An idle machine that still lacks the CPUs, GPUs, gres or disk asked
	// for never has them: the job can never run.
	if res.Matching > 0 && (res.Machine >= 0 || !c.Spec.HasResources()) {
		return ""
	}
	return res.Why()
}

// licensesUnrunnable says why the pool's licences can never run the job
// (one it asks for is not declared, or fewer are declared than one
// instance, or a whole gang, holds), or "".
func licensesUnrunnable(v fsm.View, s *fsm.JobSpec) string {
	if len(s.Licenses) == 0 {
		return ""
	}
	declared := map[string]int{}
	for _, l := range v.Licenses() {
		declared[l.Name] = l.Count
	}
	for _, name := range slices.Sorted(maps.Keys(s.Licenses)) {
		need := s.Licenses[name]
		if s.Gang {
			need *= max(s.Min, 1)
		}
		switch n, ok := declared[name]; {
		case !ok || n == 0:
			return fmt.Sprintf("no licence %s is declared (the database declares licences with license NAME = N)", name)
		case n < need:
			return fmt.Sprintf("licence %s: the database declares %d, the job holds %d at once", name, n, need)
		}
	}
	return ""
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
		n := instancesFit(views[i], req)
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
		GPUs:     gpuViews(e.GPUs, 0),
		Gres:     e.Gres,
		DiskMB:   e.DiskMB,
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
	return len(s.Keys) == 0 && len(s.Mounts) == 0 && len(s.Machines) == 0 && s.MemoryMB == 0 && len(s.Requirements) == 0 &&
		!s.HasResources()
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
