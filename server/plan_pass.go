package server

import (
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// PlanPass runs one pass of the leader's scheduler over v at now, as if
// every machine's stub were alive in gossip with no load reported, and
// returns the assignments the leader would propose in one Place. It
// changes nothing; cmd/netmgr-bench times it. Call it inside FSM.Read.
func PlanPass(v fsm.View, now time.Time) []fsm.Assignment {
	pool := make(map[string]member)
	for _, m := range v.Machines() {
		pool[m.Name] = member{Name: m.Name, Alive: true, Meta: client.NodeMeta{Role: client.RoleStub}}
	}
	p := newPlannerFrom(v, pool, now)
	var out []fsm.Assignment
	p.run(func(it queue.Item, in *fsm.Instance, res matcher.Result, _ *held) {
		if res.Machine >= 0 {
			out = append(out, fsm.Assignment{
				JobID: it.JobID, Instance: in.Index, Attempt: in.Attempt,
				Machine: p.machines[res.Machine].Name, Key: res.Key,
			})
		}
	})
	return out
}
