package planner

import (
	"maps"
	"slices"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// Queue policies side by side (queue.Limits.Policy, the database
// language's policy=), planned in the one pass, in queue order:
//
//   - backfill (the default): EASY backfill around the first job that
//     waits for capacity, the least-loaded machine first;
//   - gang: the FSM makes every job of the queue a gang (Pass.gang);
//   - dedicated: space sharing, kept by owners below: a machine running
//     a job of a dedicated queue runs jobs of that job's owner only, and
//     a dedicated job goes only where nothing of another owner runs;
//   - spread: load sharing: the least-loaded machine first, as backfill,
//     but a waiting job of the queue never becomes the head, so it holds
//     no machine for itself.

// owners is who runs on each machine, for the dedicated policy: per
// machine index, the instances of each owner, and of those the instances
// of dedicated queues. It is nil when no queue is dedicated.
type owners struct {
	on        []map[string]int
	dedicated []map[string]int
}

// newOwners counts who runs on each machine of v, or returns nil when no
// queue of limits is dedicated.
func newOwners(v fsm.View, machines []*fsm.Machine, limits map[string]queue.Limits) *owners {
	any := false
	for _, l := range limits {
		any = any || l.Placement() == queue.PolicyDedicated
	}
	if !any {
		return nil
	}
	o := &owners{on: make([]map[string]int, len(machines)), dedicated: make([]map[string]int, len(machines))}
	for i, m := range machines {
		o.on[i], o.dedicated[i] = map[string]int{}, map[string]int{}
		counts := v.JobCounts(m.Name)
		for _, id := range slices.Sorted(maps.Keys(counts)) {
			if j, ok := v.Job(id); ok {
				o.take(i, j, limits, counts[id])
			}
		}
	}
	return o
}

// take counts n instances of j on machine i.
func (o *owners) take(i int, j *fsm.Job, limits map[string]queue.Limits, n int) {
	if o == nil {
		return
	}
	o.on[i][j.Owner] += n
	if limits[j.Queue].Placement() == queue.PolicyDedicated {
		o.dedicated[i][j.Owner] += n
	}
}

// allows reports whether machine i may take an instance of j: a
// dedicated job only where every instance running is its owner's, any
// job only where no dedicated job of another owner runs.
func (o *owners) allows(i int, j *fsm.Job, dedicated bool) bool {
	others := o.dedicated[i]
	if dedicated {
		others = o.on[i]
	}
	for owner, n := range others {
		if n > 0 && owner != j.Owner {
			return false
		}
	}
	return true
}

// restrict narrows req to the machines the dedicated policy allows j; ok
// is false when it allows none of those req could use.
func (p *Pass) restrict(j *fsm.Job, req matcher.Request) (matcher.Request, bool) {
	if p.owners == nil {
		return req, true
	}
	dedicated := p.limits[j.Queue].Placement() == queue.PolicyDedicated
	var names []string
	all := true
	for i, m := range p.machines {
		if len(req.Machines) > 0 && !slices.Contains(req.Machines, m.Name) {
			continue
		}
		if p.owners.allows(i, j, dedicated) {
			names = append(names, m.Name)
		} else {
			all = false
		}
	}
	if all {
		return req, true
	}
	if len(names) == 0 {
		return req, false
	}
	req.Machines = names
	return req, true
}

// dedicatedReason is the Held reason of a job the dedicated policy keeps
// off every machine it could use.
func (p *Pass) dedicatedReason(j *fsm.Job) string {
	if p.limits[j.Queue].Placement() == queue.PolicyDedicated {
		return "queue " + j.Queue + " is dedicated: every machine it could use runs another owner's jobs"
	}
	return "every machine it could use runs a dedicated queue's job of another owner"
}

// mayLead reports whether a job of queue q that waits for capacity may
// become the head and hold machines for itself: not under spread.
func (p *Pass) mayLead(q string) bool {
	return p.limits[q].Placement() != queue.PolicySpread
}
