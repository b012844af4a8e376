package server

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
)

// TestQueueCollector checks the queue depths read from a small database:
// the default queue and a declared one, with queued and placed instances.
func TestQueueCollector(t *testing.T) {
	f := fsm.New()
	index := uint64(0)
	apply := func(typ fsm.MessageType, body any) *fsm.Result {
		t.Helper()
		data, err := fsm.Encode(typ, body)
		if err != nil {
			t.Fatalf("encode %v: %v", typ, err)
		}
		index++
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(*fsm.Result)
		if res.Err != nil {
			t.Fatalf("apply %v: %v", typ, res.Err)
		}
		return res
	}
	at := time.Date(2024, time.March, 1, 9, 30, 0, 0, time.UTC)
	binaries := map[string]string{fsm.AnyKey: "/bin/true"}
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "m1", Arch: "x86_64", CPUs: 4, MemoryMB: 4096}})
	apply(fsm.SetQueueType, fsm.SetQueue{At: at, By: "root", Queue: fsm.DeclaredQueue{Name: "batch"}})
	job := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: fsm.JobSpec{Name: "a", Binaries: binaries, Min: 3}}).JobID
	apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: fsm.JobSpec{Name: "b", Binaries: binaries, Min: 1, Queue: "batch"}})
	placed := apply(fsm.PlaceType, fsm.Place{At: at, PlannedAtIndex: index, Assignments: []fsm.Assignment{
		{JobID: job, Instance: 0, Attempt: 1, Machine: "m1", Key: fsm.AnyKey},
		{JobID: job, Instance: 1, Attempt: 1, Machine: "m1", Key: fsm.AnyKey},
	}})
	if len(placed.Accepted) != 2 {
		t.Fatalf("Place accepted %d assignments, want 2", len(placed.Accepted))
	}

	want := `
# HELP netmgr_server_active_instances Instances holding a slot (placed, running or suspended), all queues.
# TYPE netmgr_server_active_instances gauge
netmgr_server_active_instances 2
# HELP netmgr_server_queue_active_instances Instances of the queue's jobs holding a slot: placed, running or suspended.
# TYPE netmgr_server_queue_active_instances gauge
netmgr_server_queue_active_instances{queue="batch"} 0
netmgr_server_queue_active_instances{queue="default"} 2
# HELP netmgr_server_queue_queued_instances Instances waiting in the queue for a machine.
# TYPE netmgr_server_queue_queued_instances gauge
netmgr_server_queue_queued_instances{queue="batch"} 1
netmgr_server_queue_queued_instances{queue="default"} 1
# HELP netmgr_server_queued_instances Instances waiting for a machine, all queues.
# TYPE netmgr_server_queued_instances gauge
netmgr_server_queued_instances 2
`
	reg := promtext.NewRegistry()
	reg.MustRegister(&queueCollector{fsm: f})
	var got strings.Builder
	if err := reg.Write(&got); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(got.String()) != strings.TrimSpace(want) {
		t.Errorf("queue metrics:\n%s\nwant:\n%s", got.String(), want)
	}
}
