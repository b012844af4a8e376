package planner

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// Unrunnable says why no machine of the pool can run the job c submits,
// whatever the machines' state now (busy, down, asleep or reserved
// machines that meet its requirements count as able): the matcher's
// reason, such as "3 machines lack key sparc", or "" when some machine
// meets every requirement. It reads v only.
func Unrunnable(v fsm.View, live map[string]Liveness, c fsm.Submit, now time.Time) string {
	ms := v.Machines()
	views := make([]matcher.MachineView, len(ms))
	for i, m := range ms {
		views[i] = machineView(v, m, live[m.Name], now)
	}
	res := matcher.New().Match(matchRequest(&fsm.Job{Owner: c.Owner, Spec: c.Spec}, &fsm.Instance{}), views)
	if res.Matching > 0 {
		return ""
	}
	return res.Why()
}
