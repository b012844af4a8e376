package server_test

import (
	"testing"

	"github.com/netmgr/netmgr/client"
)

// A job submitted while nothing waits and machines are free is placed in
// the entry that creates it (its job-submitted and instance-placed events
// share one Raft index), as far as capacity goes; the rest waits for the
// scheduler, and a job submitted behind it is placed by the scheduler.
func TestSubmitPlacesAtOnce(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 3, "alpha")
	machines, err := cl.Machines(ctx(t))
	if err != nil || len(machines) != 1 {
		t.Fatalf("machines: %v %v", machines, err)
	}
	slots := machines[0].Slots

	first, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("exec sleep 600", slots+1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	second, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("exec sleep 600", 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	events, err := cl.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	submitted := map[uint64]uint64{} // job -> index of its job-submitted event
	placedWith := map[uint64]int{}   // job -> instances placed in that entry
	for _, ev := range events {
		switch ev.Kind {
		case "job-submitted":
			submitted[ev.Job] = ev.Index
		case "instance-placed":
			if ev.Index == submitted[ev.Job] {
				placedWith[ev.Job]++
			}
		}
	}
	if got := placedWith[first.ID]; got != slots {
		t.Errorf("job %d: %d instances placed with the submit, want %d (the machine's slots)", first.ID, got, slots)
	}
	if got := placedWith[second.ID]; got != 0 {
		t.Errorf("job %d: %d instances placed with the submit behind a waiting job, want 0", second.ID, got)
	}
}
