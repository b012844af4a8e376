package planner_test

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// TestPassUsesPrimeValuesInForce: queue debug has priority 5 and
// nq_maxactive 1 outside its prime-time window and priority 20 with no
// nq_maxactive inside; batch has priority 10. On machine a (2 slots) a
// pass places batch's job and one instance of debug's before the window
// opens, and both of debug's instances, ahead of batch, once a
// PrimeTimeSwitch has opened it; the pass reads no clock to know.
func TestPassUsesPrimeValuesInForce(t *testing.T) {
	f, apply := newState(t)
	prio, active := 20, int64(0)
	apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, By: "tclark", Database: fsm.Database{Queues: []fsm.DeclaredQueue{
		{Name: "batch", Priority: 10},
		{Name: "debug", Priority: 5, MaxActive: 1, Prime: &fsm.DeclaredPrime{Windows: []string{"Mon-Fri 08:00-18:00"}, Priority: &prio, MaxActive: &active}},
	}}})
	x86 := map[string]string{"x86_64": "/bin/x"}
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: x86, Min: 1, Queue: "batch"}})
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "gina", Spec: fsm.JobSpec{Binaries: x86, Min: 2, Queue: "debug"}})
	// The same time for both passes: only the committed switch differs.
	now := at.Add(time.Hour)
	count := func() map[uint64]int {
		t.Helper()
		var p fsm.Place
		f.Read(func(v fsm.View) { p = planner.New(v, allUp(v), now).Place() })
		n := map[uint64]int{}
		for _, a := range p.Assignments {
			n[a.JobID]++
		}
		return n
	}
	if got := count(); got[1] != 1 || got[2] != 1 {
		t.Errorf("outside the window: placed %v, want batch's job and one of debug's (nq_maxactive 1)", got)
	}
	apply(fsm.PrimeTimeSwitchType, fsm.PrimeTimeSwitch{At: now, Queue: "debug", Open: true, Scheduled: at})
	if got := count(); got[1] != 0 || got[2] != 2 {
		t.Errorf("inside the window: placed %v, want both of debug's instances first (priority 20, no nq_maxactive)", got)
	}
}
