package planner_test

import (
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// TestInteractiveQueueFirst: the interactive queue's waiting work goes
// before a higher-priority queue's backlog submitted earlier, and takes
// the one free slot.
func TestInteractiveQueueFirst(t *testing.T) {
	f := fsm.New()
	apply := applier(t, f)
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "a", Arch: "x86_64", CPUs: 1, MemoryMB: 1024}})
	apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, Database: fsm.Database{Queues: []fsm.DeclaredQueue{
		{Name: "batch", Priority: 9}, {Name: "now", Interactive: true},
	}}})
	sub := func(q string) uint64 {
		return apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: q}}).JobID
	}
	b1, b2 := sub("batch"), sub("batch")
	dflt := sub("")
	now := sub("now")
	now2 := sub("now")
	f.Read(func(v fsm.View) {
		if got, want := order(v, at.Add(time.Minute)), []uint64{now, now2, b1, b2, dflt}; !slices.Equal(got, want) {
			t.Errorf("order %v, want %v: the interactive queue's in submit order, then by priority", got, want)
		}
		p := planner.New(v, allUp(v), at.Add(time.Minute)).Place()
		if len(p.Assignments) != 1 || p.Assignments[0].JobID != now {
			t.Errorf("assignments %+v, want the one slot to job %d of the interactive queue", p.Assignments, now)
		}
	})
}
