package planner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// benchShareState is 100 machines of 8 slots with one slot free, 1,000
// users who have each run a job of 1 to 1,000 seconds, and 100,000
// waiting instances: 10,000 jobs of 10, 10 per user, submitted round the
// users. fair says whether fair share is on (FairShareStart committed
// before the runs, so they are charged).
func benchShareState(b *testing.B, fair bool) *fsm.FSM {
	b.Helper()
	f := fsm.New()
	var index uint64
	apply := func(typ fsm.MessageType, body any) *fsm.Result {
		data, err := fsm.Encode(typ, body)
		if err != nil {
			b.Fatal(err)
		}
		index++
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(*fsm.Result)
		if res.Err != nil {
			b.Fatalf("apply %v: %v", typ, res.Err)
		}
		return res
	}
	if fair {
		apply(fsm.FairShareStartType, fsm.FairShareStart{At: at})
	}
	for m := range 100 {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: fmt.Sprintf("m%03d", m), Arch: "x86_64", CPUs: 8, MemoryMB: 1 << 16}})
	}
	spec := func(n int) fsm.JobSpec { return fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: n} }
	for u := range 1000 {
		owner := fmt.Sprintf("user%04d", u)
		id := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: owner, Spec: spec(1)}).JobID
		machine := fmt.Sprintf("m%03d", u%100)
		apply(fsm.PlaceType, fsm.Place{At: at, Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 1, Machine: machine, Key: "*"}}})
		apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: id, Instance: 0, Attempt: 1, Machine: machine, PID: 1})
		apply(fsm.ChildTermType, fsm.ChildTerm{At: at.Add(time.Duration(1+u) * time.Second), JobID: id, Instance: 0, Attempt: 1, Machine: machine})
	}
	// Fill all but one slot with long runs of one user.
	for m := range 100 {
		machine := fmt.Sprintf("m%03d", m)
		n := 8
		if m == 0 {
			n = 7
		}
		id := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "filler", Spec: spec(n)}).JobID
		var as []fsm.Assignment
		for i := range n {
			as = append(as, fsm.Assignment{JobID: id, Instance: i, Attempt: 1, Machine: machine, Key: "*"})
		}
		apply(fsm.PlaceType, fsm.Place{At: at, Assignments: as})
	}
	for j := range 10000 {
		apply(fsm.SubmitType, fsm.Submit{At: at, Owner: fmt.Sprintf("user%04d", j%1000), Spec: spec(10)})
	}
	return f
}

// BenchmarkPassFairShare is one scheduling pass over 100,000 waiting
// instances of 1,000 users, fair share off (today's order) and on. The
// issue's bound: on adds at most 20%.
func BenchmarkPassFairShare(b *testing.B) {
	for _, fair := range []bool{false, true} {
		name := "off"
		if fair {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			f := benchShareState(b, fair)
			now := at.Add(time.Hour)
			b.ResetTimer()
			for range b.N {
				f.Read(func(v fsm.View) {
					if p := planner.New(v, allUp(v), now).Place(); len(p.Assignments) != 1 {
						b.Fatalf("placed %d, want 1", len(p.Assignments))
					}
				})
			}
		})
	}
}
