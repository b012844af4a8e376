package planner

import (
	"fmt"
	"maps"
	"slices"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// licenses is what a pass knows of the pool's licences: how many of each
// are free, less what the pass has placed so far. A job that asks for
// more than are free waits, held with a reason that names the licence;
// the FSM counts them again on Apply, so a stale pass cannot overcommit.
type licenses struct {
	free, count map[string]int
}

// newLicenses reads the licences' use from v.
func newLicenses(v fsm.View) licenses {
	l := licenses{free: map[string]int{}, count: map[string]int{}}
	for _, u := range v.Licenses() {
		l.free[u.Name] = u.Count - u.Used
		l.count[u.Name] = u.Count
	}
	return l
}

// held returns the reason n instances of j cannot hold their licences
// now, or nil when they can.
func (l licenses) held(j *fsm.Job, n int) *Held {
	for _, name := range slices.Sorted(maps.Keys(j.Spec.Licenses)) {
		need := j.Spec.Licenses[name] * n
		if free := l.free[name]; free < need {
			return &Held{Reason: fmt.Sprintf("waiting for licence %s: %d of %d in use, needs %d",
				name, l.count[name]-max(free, 0), l.count[name], need)}
		}
	}
	return nil
}

// take counts n instances of j holding their licences.
func (l licenses) take(j *fsm.Job, n int) {
	for name, need := range j.Spec.Licenses { // each name its own counter
		l.free[name] -= need * n
	}
}

// instancesFit is how many instances of req an idle machine m could hold
// at once: its CPUs, GPUs of the type, generic resources and disk, each
// divided by what one instance asks, the least of them.
func instancesFit(m matcher.MachineView, req matcher.Request) int {
	n := m.Slots / max(req.CPUs, 1)
	if req.GPUs > 0 {
		have := 0
		for _, g := range m.GPUs {
			if req.GPUType == "" || g.Type == req.GPUType {
				have++
			}
		}
		n = min(n, have/req.GPUs)
	}
	for _, g := range req.Gres {
		n = min(n, m.Gres[g.Name]/g.Count)
	}
	if req.DiskMB > 0 {
		n = min(n, int(m.DiskMB/req.DiskMB))
	}
	return n
}
