package fsm_test

import (
	"errors"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// shareDB is a database with account physics (share 10: alice with share
// 2, bob) and a half-life of an hour; carol is in the default account.
func shareDB() fsm.Database {
	return fsm.Database{
		Accounts:        []fsm.DeclaredAccount{{Name: "physics", Share: 10, Users: []string{"alice", "bob"}}},
		Shares:          []fsm.DeclaredShare{{User: "alice", Share: 2}},
		HalfLifeSeconds: 3600,
		Queues:          []fsm.DeclaredQueue{{Name: "q", MaxUserActive: 1, MaxUserQueued: 2}},
	}
}

// run submits a one-instance job of owner, places it on machine, starts
// it at start and ends it at end (seconds after t0), and returns its id.
func (a *applier) runFor(owner, machine string, start, end int) uint64 {
	a.tb.Helper()
	id := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(start), Owner: owner, Spec: spec(owner, 1)}).JobID
	if res := a.mustOK(fsm.PlaceType, fsm.Place{At: at(start), Assignments: []fsm.Assignment{asg(id, 0, machine)}}); len(res.Accepted) != 1 {
		a.tb.Fatalf("job %d of %s not placed on %s", id, owner, machine)
	}
	a.mustOK(fsm.ChildRegisterType, fsm.ChildRegister{At: at(start), JobID: id, Instance: 0, Attempt: 1, Machine: machine, PID: 100 + int(id)})
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(end), JobID: id, Instance: 0, Attempt: 1, Machine: machine})
	return id
}

// TestFairShareScriptedEnds charges a scripted sequence of ends and
// checks every usage, decayed, to the slot-millisecond.
func TestFairShareScriptedEnds(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.load(shareDB())
	// An end before fair share is on charges nothing.
	a.runFor("carol", "m1", 0, 100)
	if res := a.mustOK(fsm.FairShareStartType, fsm.FairShareStart{At: at(0)}); res.Stale {
		t.Fatal("first FairShareStart is stale")
	}
	if res := a.mustOK(fsm.FairShareStartType, fsm.FairShareStart{At: at(1)}); !res.Stale {
		t.Error("second FairShareStart is not stale")
	}
	a.runFor("alice", "m1", 0, 1800)    // alice 1,800,000 at 1800
	a.runFor("bob", "m1", 0, 3600)      // bob 3,600,000 at 3600; physics 1,800,000/√2 + 3,600,000
	a.runFor("carol", "m1", 3600, 7200) // carol 3,600,000 at 7200
	a.runFor("alice", "m1", 5400, 5400) // ran no time: costs nothing
	a.f.Read(func(v fsm.View) {
		if !v.FairShareOn() || v.HalfLife().Seconds() != 3600 {
			t.Fatalf("on %v, half-life %v", v.FairShareOn(), v.HalfLife())
		}
		ms := func(n int) int64 { return at(n).UnixMilli() }
		for _, tc := range []struct {
			name string
			got  queue.Usage
			want queue.Usage
		}{
			{"alice", v.UserUsage("alice"), queue.Usage{Value: 1800000, At: ms(1800)}},
			{"bob", v.UserUsage("bob"), queue.Usage{Value: 3600000, At: ms(3600)}},
			{"carol", v.UserUsage("carol"), queue.Usage{Value: 3600000, At: ms(7200)}},
			{"physics", v.AccountUsage("physics"), queue.Usage{Value: 1272792 + 3600000, At: ms(3600)}},
			{"default", v.AccountUsage("default"), queue.Usage{Value: 3600000, At: ms(7200)}},
		} {
			if tc.got != tc.want {
				t.Errorf("usage of %s: got %+v, want %+v", tc.name, tc.got, tc.want)
			}
		}
		if got := v.UsageAt(); got != ms(7200) {
			t.Errorf("UsageAt %d, want %d", got, ms(7200))
		}
		// Everything decayed to 7200: physics 4,872,792 halves once,
		// alice's 1,800,000 one and a half times, bob's once.
		for _, tc := range []struct {
			user string
			want queue.ShareKey
		}{
			{"alice", queue.ShareKey{AccountUsage: 2436396, AccountShare: 10, UserUsage: 636396, UserShare: 2}},
			{"bob", queue.ShareKey{AccountUsage: 2436396, AccountShare: 10, UserUsage: 1800000, UserShare: 1}},
			{"carol", queue.ShareKey{AccountUsage: 3600000, AccountShare: 1, UserUsage: 3600000, UserShare: 1}},
			{"dave", queue.ShareKey{AccountUsage: 3600000, AccountShare: 1, UserUsage: 0, UserShare: 1}},
		} {
			if got := v.ShareKey(tc.user); got != tc.want {
				t.Errorf("ShareKey(%s) = %+v, want %+v", tc.user, got, tc.want)
			}
		}
	})
}

// TestFairShareNoDoubleCharge: a result reported for an instance already
// declared lost is recorded, but its run was charged when it was lost.
func TestFairShareNoDoubleCharge(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.mustOK(fsm.FairShareStartType, fsm.FairShareStart{At: at(0)})
	id := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(0), Owner: "erin", Spec: spec("lost", 1)}).JobID
	a.mustOK(fsm.PlaceType, fsm.Place{At: at(0), Assignments: []fsm.Assignment{asg(id, 0, "m1")}})
	a.mustOK(fsm.ChildRegisterType, fsm.ChildRegister{At: at(10), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", PID: 7})
	a.mustOK(fsm.StubLeaveType, fsm.StubLeave{At: at(20), Machine: "m1", Reason: "gone"})
	a.apply(fsm.ChildTermType, fsm.ChildTerm{At: at(90), JobID: id, Instance: 0, Attempt: 1, Machine: "m1"})
	a.f.Read(func(v fsm.View) {
		if got := v.UserUsage("erin").Value; got != 10000 {
			t.Errorf("erin's usage %d, want 10000 (10 s, charged once, when lost)", got)
		}
	})
}

// TestPerUserLimitsApply: nq_maxuser_queued refuses a submit past it,
// naming the limit, and nq_maxuser_active drops a placement past it.
func TestPerUserLimitsApply(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.load(shareDB())
	q := func(name string) fsm.JobSpec { s := spec(name, 1); s.Queue = "q"; return s }
	j1 := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: q("a1")}).JobID
	j2 := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: q("a2")}).JobID
	res := a.apply(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: q("a3")})
	if !errors.Is(res.Err, queue.ErrUserQueueFull) {
		t.Fatalf("third job of alice: got %v, want ErrUserQueueFull", res.Err)
	}
	if want := "user alice already holds 2 unfinished jobs in queue q (nq_maxuser_queued=2); wait for some to finish or use another queue"; res.Err.Error() != want {
		t.Errorf("got %q, want %q", res.Err, want)
	}
	j3 := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "bob", Spec: q("b1")}).JobID
	got := a.mustOK(fsm.PlaceType, fsm.Place{At: at(2), Assignments: []fsm.Assignment{asg(j1, 0, "m1"), asg(j2, 0, "m1"), asg(j3, 0, "m1")}})
	if want := []fsm.Assignment{asg(j1, 0, "m1"), asg(j3, 0, "m1")}; len(got.Accepted) != 2 || got.Accepted[0] != want[0] || got.Accepted[1] != want[1] || got.Dropped != 1 {
		t.Errorf("placed %v (dropped %d), want %v: alice's second is past nq_maxuser_active=1", got.Accepted, got.Dropped, want)
	}
	a.f.Read(func(v fsm.View) {
		if c := v.QueueUserCounts("q", "alice"); c != (fsm.UserCounts{Jobs: 2, Waiting: 1, Active: 1}) {
			t.Errorf("alice in q: %+v", c)
		}
		if tot := v.UserTotals()["bob"]; tot != (fsm.UserCounts{Jobs: 1, Active: 1}) {
			t.Errorf("bob's totals: %+v", tot)
		}
	})
	// Once alice's first ends, her second may run and a third be queued.
	a.mustOK(fsm.ChildRegisterType, fsm.ChildRegister{At: at(3), JobID: j1, Instance: 0, Attempt: 1, Machine: "m1", PID: 9})
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(4), JobID: j1, Instance: 0, Attempt: 1, Machine: "m1"})
	if got := a.mustOK(fsm.PlaceType, fsm.Place{At: at(5), Assignments: []fsm.Assignment{asg(j2, 0, "m1")}}); len(got.Accepted) != 1 {
		t.Error("alice's second not placed after her first ended")
	}
	a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "alice", Spec: q("a3")})
}

// TestDatabaseSharesChecked: Apply refuses a user in two accounts.
func TestDatabaseSharesChecked(t *testing.T) {
	a := newApplier(t)
	db := shareDB()
	db.Accounts = append(db.Accounts, fsm.DeclaredAccount{Name: "chem", Users: []string{"bob"}})
	res := a.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(1), Database: db})
	if !errors.Is(res.Err, fsm.ErrInvalidDatabase) {
		t.Errorf("got %v, want ErrInvalidDatabase", res.Err)
	}
}
