package planner_test

import (
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// TestJobPriorityBeforeFairShare: within a queue, a job's own priority
// (as a site policy's admit sets it) comes before fair share and submit
// order: alice's job 7, later and charged more than bob's job 6, goes
// before it; bob's job 8 of the same job priority goes before 7 by fair
// share. The "behind N" reason counts only work of the same job
// priority: job 2 is behind bob's 6 alone, not his 8.
func TestJobPriorityBeforeFairShare(t *testing.T) {
	f, apply := shareState(t, false)
	prio := func(owner string, n int) {
		apply(fsm.SubmitType, fsm.Submit{At: at.Add(3 * time.Minute), Owner: owner,
			Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: "q", Priority: n}})
	}
	prio("alice", 3) // job 7
	prio("bob", 3)   // job 8
	f.Read(func(v fsm.View) {
		if got, want := order(v, at.Add(4*time.Minute)), []uint64{8, 7, 6, 2, 3, 4, 5}; !slices.Equal(got, want) {
			t.Errorf("order %v, want %v: job priority 3 first (bob before alice by fair share), then fair share", got, want)
		}
	})
	// carol fills both slots, so everything waits and says why.
	for range 2 {
		id := apply(fsm.SubmitType, fsm.Submit{At: at.Add(3 * time.Minute), Owner: "carol", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: "q"}}).JobID
		apply(fsm.PlaceType, fsm.Place{At: at.Add(3 * time.Minute), Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 1, Machine: "a", Key: "*"}}})
	}
	why := map[uint64]string{}
	f.Read(func(v fsm.View) {
		planner.New(v, allUp(v), at.Add(4*time.Minute)).Explain().Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, h *planner.Held) {
			if h != nil {
				why[it.JobID] = h.Reason
			}
		})
	})
	if want := "behind 1 instance of users with lower usage (your factor 0.50)"; why[2] != want {
		t.Errorf("why job 2: %q, want %q", why[2], want)
	}
}
