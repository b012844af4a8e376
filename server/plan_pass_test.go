package server_test

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server"
)

// TestPlanPass: the leader's planner, run without gossip, places what
// fits where it fits (every machine taken as alive), and leaves the rest
// queued.
func TestPlanPass(t *testing.T) {
	f := fsm.New()
	var index uint64
	apply := func(typ fsm.MessageType, body any) {
		t.Helper()
		data, err := fsm.Encode(typ, body)
		if err != nil {
			t.Fatal(err)
		}
		index++
		if res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(*fsm.Result); res.Err != nil {
			t.Fatalf("apply %v: %v", typ, res.Err)
		}
	}
	at := time.Date(2025, time.March, 3, 8, 0, 0, 0, time.UTC)
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "a", Arch: "x86_64", CPUs: 2, MemoryMB: 1024}})
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "b", Arch: "sparc", CPUs: 1, MemoryMB: 1024}})
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"x86_64": "/bin/x"}, Min: 3}})
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "fred", Spec: fsm.JobSpec{Binaries: map[string]string{"sparc": "/bin/s"}, Min: 1}})

	var got []fsm.Assignment
	f.Read(func(v fsm.View) { got = server.PlanPass(v, at.Add(time.Minute)) })
	want := map[string]int{"a": 2, "b": 1}
	for _, a := range got {
		want[a.Machine]--
		if (a.Machine == "a") != (a.JobID == 1) || a.Attempt != 1 {
			t.Errorf("got assignment %+v, want job 1 on a and job 2 on b, attempt 1", a)
		}
	}
	if len(got) != 3 || want["a"] != 0 || want["b"] != 0 {
		t.Errorf("got %d assignments %+v, want 2 on a (its slots) and 1 on b", len(got), got)
	}
}
