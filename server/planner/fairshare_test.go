package planner_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// shareState is one machine "a" with two slots, fair share on, a
// database with a queue q (nq_maxuser_active=1 when limit), and alice
// charged 60 s (her job 1 ran from at to at+1m); then alice submits jobs
// 2 to 5 and bob job 6. It returns the FSM and its applier.
func shareState(t *testing.T, limit bool) (*fsm.FSM, func(fsm.MessageType, any) *fsm.Result) {
	t.Helper()
	f := fsm.New()
	apply := applier(t, f)
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "a", Arch: "x86_64", CPUs: 2, MemoryMB: 1024}})
	db := fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "q"}}}
	if limit {
		db.Queues[0].MaxUserActive = 1
	}
	apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, Database: db})
	apply(fsm.FairShareStartType, fsm.FairShareStart{At: at})
	sub := func(owner string, t time.Time) uint64 {
		return apply(fsm.SubmitType, fsm.Submit{At: t, Owner: owner, Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: "q"}}).JobID
	}
	run := func(id uint64, start time.Time) {
		apply(fsm.PlaceType, fsm.Place{At: start, Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 1, Machine: "a", Key: "*"}}})
		apply(fsm.ChildRegisterType, fsm.ChildRegister{At: start, JobID: id, Instance: 0, Attempt: 1, Machine: "a", PID: int(id)})
	}
	j1 := sub("alice", at)
	run(j1, at)
	apply(fsm.ChildTermType, fsm.ChildTerm{At: at.Add(time.Minute), JobID: j1, Instance: 0, Attempt: 1, Machine: "a"})
	for range 4 {
		sub("alice", at.Add(time.Minute))
	}
	sub("bob", at.Add(2*time.Minute))
	return f, apply
}

// order is the jobs in the order Run visits their instances.
func order(v fsm.View, now time.Time) []uint64 {
	var got []uint64
	planner.New(v, allUp(v), now).Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, _ *planner.Held) {
		got = append(got, it.JobID)
	})
	return got
}

// TestFairShareOrder: bob, who has used nothing, goes before alice's
// earlier jobs; the same on a replica restored from a snapshot (a new
// leader), whatever the pass's clock.
func TestFairShareOrder(t *testing.T) {
	f, _ := shareState(t, false)
	now := at.Add(3 * time.Minute)
	var got, later []uint64
	var place fsm.Place
	f.Read(func(v fsm.View) {
		got = order(v, now)
		later = order(v, now.Add(240*time.Hour))
		place = planner.New(v, allUp(v), now).Place()
	})
	if want := []uint64{6, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v: bob (no usage) first, then alice's in submit order", got, want)
	}
	if !slices.Equal(later, got) {
		t.Errorf("order ten days on %v, want %v: the order reads no clock", later, got)
	}
	if len(place.Assignments) != 2 || place.Assignments[0].JobID != 6 || place.Assignments[1].JobID != 2 {
		t.Errorf("placed %+v, want jobs 6 then 2", place.Assignments)
	}

	// A new leader restored from a snapshot orders the same way.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&sink{Writer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := fsm.New()
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	g.Read(func(v fsm.View) {
		if again := order(v, now); !slices.Equal(again, got) {
			t.Errorf("restored replica orders %v, want %v", again, got)
		}
		if p := planner.New(v, allUp(v), now).Place(); !slices.Equal(p.Assignments, place.Assignments) {
			t.Errorf("restored replica places %+v, want %+v", p.Assignments, place.Assignments)
		}
	})
}

// TestFairShareOffKeepsSubmitOrder: without FairShareStart, submit order.
func TestFairShareOffKeepsSubmitOrder(t *testing.T) {
	f, apply := newState(t)
	for _, o := range []string{"alice", "alice", "bob"} {
		apply(fsm.SubmitType, fsm.Submit{At: at, Owner: o, Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1}})
	}
	f.Read(func(v fsm.View) {
		if got := order(v, at); !slices.Equal(got, []uint64{1, 2, 3}) {
			t.Errorf("order %v, want submit order", got)
		}
	})
}

// TestWhyFairShare: with the pool full, an instance fair share put
// behind later ones says so, with the owner's factor.
func TestWhyFairShare(t *testing.T) {
	f, apply := shareState(t, false)
	// carol fills both slots.
	for range 2 {
		id := apply(fsm.SubmitType, fsm.Submit{At: at.Add(3 * time.Minute), Owner: "carol", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: "q", Name: "c"}}).JobID
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
	if why[6] != "" {
		t.Errorf("why job 6 (bob, first): %q, want no fair-share reason", why[6])
	}
}

// TestPerUserActiveHeld: nq_maxuser_active holds alice's second instance
// and says why; bob is not held by it.
func TestPerUserActiveHeld(t *testing.T) {
	f, _ := shareState(t, true)
	why := map[uint64]string{}
	var placed []uint64
	f.Read(func(v fsm.View) {
		planner.New(v, allUp(v), at.Add(3*time.Minute)).Run(func(it queue.Item, _ *fsm.Instance, res matcher.Result, h *planner.Held) {
			if h != nil {
				why[it.JobID] = h.Reason
			}
			if res.Machine >= 0 {
				placed = append(placed, it.JobID)
			}
		})
	})
	if !slices.Equal(placed, []uint64{6, 2}) {
		t.Errorf("placed %v, want bob's 6 and alice's 2", placed)
	}
	if want := "user alice already runs 1 instance in queue q (nq_maxuser_active=1)"; why[3] != want || !strings.Contains(why[5], "nq_maxuser_active") {
		t.Errorf("why job 3: %q, want %q", why[3], want)
	}
}

// sink is a raft.SnapshotSink over a writer.
type sink struct{ io.Writer }

func (sink) ID() string    { return "test" }
func (sink) Cancel() error { return nil }
func (sink) Close() error  { return nil }

var _ raft.SnapshotSink = (*sink)(nil)
