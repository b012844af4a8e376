package planner

import (
	"slices"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// Reservable picks n machines for owner to reserve from from until until
// (zero: no end): machines that accept work, meet spec and are free of
// other users' reservations over the window, least loaded first (the
// matcher's own ranking), one instance's worth each. It returns their
// names sorted; when fewer than n qualify it returns those it found and
// the matcher's reason there are no more.
func Reservable(v fsm.View, live map[string]Liveness, owner string, spec fsm.JobSpec, n int, from, until time.Time) ([]string, string) {
	taken := reservedDuring(v, owner, from, until)
	ms := v.Machines()
	views := make([]matcher.MachineView, len(ms))
	for i, m := range ms {
		views[i] = machineView(v, m, live[m.Name], from)
		// A reservation needs the machine, not a free slot now.
		views[i].Running, views[i].UsedCPUs, views[i].UsedGres, views[i].UsedDiskMB = 0, 0, nil, 0
		views[i].GPUs = gpuViews(m.Effective().GPUs, 0)
		views[i].ReservedBy = ""
		if taken[m.Name] {
			views[i].ReservedBy = "another user"
		}
	}
	pool := matcher.NewPool(views)
	mt := matcher.New()
	req := matchRequest(&fsm.Job{Owner: owner, Spec: spec}, &fsm.Instance{})
	req.MaxPerMachine = 1
	var picked []string
	for len(picked) < n {
		res := mt.MatchPool(req, pool)
		if res.Machine < 0 {
			return picked, res.Why()
		}
		picked = append(picked, ms[res.Machine].Name)
		pool.Take(res.Machine, req)
	}
	slices.Sort(picked)
	return picked, ""
}

// reservedDuring names the machines another user than owner holds during
// the window.
func reservedDuring(v fsm.View, owner string, from, until time.Time) map[string]bool {
	out := make(map[string]bool)
	for _, r := range v.Reservations() {
		if r.Owner == owner {
			continue
		}
		endsFirst := !r.Until.IsZero() && !r.Until.After(from)
		startsAfter := !until.IsZero() && !until.After(r.From)
		if !endsFirst && !startsAfter {
			for _, m := range r.Machines {
				out[m] = true
			}
		}
	}
	return out
}
