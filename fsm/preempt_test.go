package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// preemptDB declares LONG (priority 1), MID (priority 5, not preempting)
// and DEBUG (priority 10, preempting in mode) on machines joined as is.
func preemptDB(mode string) fsm.Database {
	return fsm.Database{Queues: []fsm.DeclaredQueue{
		{Name: "LONG", Priority: 1},
		{Name: "MID", Priority: 5},
		{Name: "DEBUG", Priority: 10, Preempt: mode},
	}}
}

// inQueue returns s in queue q with restart policy restart.
func inQueue(s fsm.JobSpec, q, restart string) fsm.JobSpec {
	s.Queue, s.Restart = q, restart
	return s
}

// preemptPool joins m1 (one slot), loads preemptDB(mode), and runs job 1
// of LONG (restart on failure) there: attempt 1 is running.
func preemptPool(t *testing.T, mode string) *applier {
	t.Helper()
	a := newApplier(t)
	a.join("m1", "x86_64", 1)
	a.load(preemptDB(mode))
	a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: inQueue(spec("long", 1), "LONG", fsm.RestartOnFailure)})
	a.place(asg(1, 0, "m1"))
	a.register(1, 0, "m1", 100)
	a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "bob", Spec: inQueue(spec("debug", 1), "DEBUG", "")})
	return a
}

func victims(vs ...[3]uint64) []fsm.Victim {
	out := make([]fsm.Victim, len(vs))
	for i, v := range vs {
		out[i] = fsm.Victim{JobID: v[0], Instance: int(v[1]), Attempt: v[2]}
	}
	return out
}

func TestPreemptRequeue(t *testing.T) {
	a := preemptPool(t, fsm.PreemptRequeue)
	res := a.mustOK(fsm.PreemptType, fsm.Preempt{At: at(7), Preemptor: 2, Victims: victims([3]uint64{1, 0, 1})})
	if res.Affected != 1 || res.Dropped != 0 {
		t.Fatalf("got affected %d dropped %d, want 1 and 0", res.Affected, res.Dropped)
	}
	in := a.instance(1, 0)
	if in.State != fsm.InstanceRunning || in.Preempt != fsm.PreemptRequeue || in.PreemptedBy != 2 {
		t.Fatalf("victim: got %s preempt %q by %d, want running, requeue, 2", in.State, in.Preempt, in.PreemptedBy)
	}
	// Exactly once: the same entry again takes nothing.
	if res := a.mustOK(fsm.PreemptType, fsm.Preempt{At: at(8), Preemptor: 2, Victims: victims([3]uint64{1, 0, 1})}); res.Affected != 0 || res.Dropped != 1 {
		t.Errorf("repeated Preempt: got affected %d dropped %d, want 0 and 1", res.Affected, res.Dropped)
	}
	// The victim still holds its slot: the preemptor cannot start yet.
	if res := a.place(asg(2, 0, "m1")); len(res.Accepted) != 0 {
		t.Fatalf("preemptor placed while its victim still runs: %+v", res.Accepted)
	}
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(9), JobID: 1, Instance: 0, Attempt: 1, Machine: "m1", Signal: "TERM"})
	in = a.instance(1, 0)
	if in.State != fsm.InstanceQueued || in.Attempt != 2 || in.Restarts != 0 || in.Preempt != "" || in.PreemptedBy != 0 {
		t.Fatalf("victim after its end: got %s attempt %d restarts %d preempt %q by %d, want queued attempt 2 with no restart counted",
			in.State, in.Attempt, in.Restarts, in.Preempt, in.PreemptedBy)
	}
	if h := in.History; len(h) != 1 || h[0].State != fsm.InstancePreempted || h[0].Reason != "preempted by job 2" {
		t.Fatalf("victim history: got %+v, want one attempt ended preempted by job 2", h)
	}
	if res := a.place(asg(2, 0, "m1")); len(res.Accepted) != 1 {
		t.Fatalf("preemptor not placed once its victim ended: dropped %d", res.Dropped)
	}
	var kinds []string
	a.f.Read(func(v fsm.View) {
		for _, e := range v.EventsSince(0) {
			if strings.Contains(e.Kind, "preempt") {
				kinds = append(kinds, e.Kind+": "+e.Detail)
			}
		}
	})
	if len(kinds) != 2 || !strings.Contains(kinds[0], "preempted by job 2 (queue DEBUG, priority 10)") || !strings.Contains(kinds[1], "1/0") {
		t.Errorf("got preemption events %q, want the victim's and the preemptor's", kinds)
	}
}

func TestPreemptRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(a *applier) // after preemptPool
		body  fsm.Preempt
	}{
		{"non-restartable victim for requeue", func(a *applier) {
			a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "carl", Spec: inQueue(spec("once", 1), "LONG", "")})
			a.join("m2", "x86_64", 1)
			a.place(asg(3, 0, "m2"))
			a.register(3, 0, "m2", 300)
		}, fsm.Preempt{Preemptor: 2, Victims: victims([3]uint64{3, 0, 1})}},
		{"victim of an equal priority", func(a *applier) {
			a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "carl", Spec: inQueue(spec("peer", 1), "DEBUG", fsm.RestartAlways)})
			a.join("m2", "x86_64", 1)
			a.place(asg(3, 0, "m2"))
			a.register(3, 0, "m2", 300)
		}, fsm.Preempt{Preemptor: 2, Victims: victims([3]uint64{3, 0, 1})}},
		{"preemptor of a queue that does not preempt", func(a *applier) {
			a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "carl", Spec: inQueue(spec("mid", 1), "MID", "")})
		}, fsm.Preempt{Preemptor: 3, Victims: victims([3]uint64{1, 0, 1})}},
		{"stale attempt", func(a *applier) {}, fsm.Preempt{Preemptor: 2, Victims: victims([3]uint64{1, 0, 2})}},
		{"victim not running", func(a *applier) {
			a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "carl", Spec: inQueue(spec("waits", 1), "LONG", fsm.RestartAlways)})
		}, fsm.Preempt{Preemptor: 2, Victims: victims([3]uint64{3, 0, 1})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := preemptPool(t, fsm.PreemptRequeue)
			tc.setup(a)
			tc.body.At = at(20)
			res := a.mustOK(fsm.PreemptType, tc.body)
			if res.Affected != 0 || res.Dropped != len(tc.body.Victims) {
				t.Errorf("got affected %d dropped %d, want 0 and %d", res.Affected, res.Dropped, len(tc.body.Victims))
			}
			checkInvariants(t, a.f, 0)
		})
	}
}

func TestPreemptSuspendLendsTheSlot(t *testing.T) {
	a := preemptPool(t, fsm.PreemptSuspend)
	a.mustOK(fsm.PreemptType, fsm.Preempt{At: at(7), Preemptor: 2, Victims: victims([3]uint64{1, 0, 1})})
	in := a.instance(1, 0)
	if in.State != fsm.InstanceSuspended || !in.Lent() || in.SuspendIndex == 0 {
		t.Fatalf("victim: got %s lent %v suspend index %d, want suspended and lent", in.State, in.Lent(), in.SuspendIndex)
	}
	if n := a.running("m1"); n != 0 {
		t.Fatalf("m1 runs %d with its only instance lent, want 0", n)
	}
	checkInvariants(t, a.f, 0)
	// netmgr resume does not continue a lent instance.
	if res := a.mustOK(fsm.ResumeType, fsm.JobControl{At: at(8), JobID: 1, By: "alice"}); res.Affected != 0 {
		t.Errorf("netmgr resume continued a lent instance")
	}
	if res := a.place(asg(2, 0, "m1")); len(res.Accepted) != 1 {
		t.Fatalf("preemptor not placed on the lent slot")
	}
	a.register(2, 0, "m1", 200)
	resume := fsm.Preempt{At: at(9), Resume: true, Victims: victims([3]uint64{1, 0, 1})}
	if res := a.mustOK(fsm.PreemptType, resume); res.Affected != 0 {
		t.Fatalf("resumed while the preemptor runs")
	}
	a.term(2, 0, "m1", 0)
	// A queued job took the slot first: the victim stays stopped.
	a.mustOK(fsm.SubmitType, fsm.Submit{At: at(10), Owner: "carl", Spec: inQueue(spec("mid", 1), "MID", "")})
	a.place(asg(3, 0, "m1"))
	if res := a.mustOK(fsm.PreemptType, resume); res.Affected != 0 {
		t.Fatalf("resumed onto a full machine")
	}
	a.register(3, 0, "m1", 300)
	a.term(3, 0, "m1", 0)
	if res := a.mustOK(fsm.PreemptType, resume); res.Affected != 1 {
		t.Fatalf("not resumed once its preemptor ended and its slot freed: dropped %d", res.Dropped)
	}
	in = a.instance(1, 0)
	if in.State != fsm.InstanceRunning || in.Lent() || in.ResumeIndex <= in.SuspendIndex || in.Attempt != 1 {
		t.Fatalf("victim: got %s lent %v resume %d suspend %d attempt %d, want attempt 1 running again",
			in.State, in.Lent(), in.ResumeIndex, in.SuspendIndex, in.Attempt)
	}
	if n := a.running("m1"); n != 1 {
		t.Errorf("m1 runs %d, want 1", n)
	}
	checkInvariants(t, a.f, 1)
}

func TestPreemptGangWhole(t *testing.T) {
	for _, mode := range []string{fsm.PreemptRequeue, fsm.PreemptSuspend} {
		t.Run(mode, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 1)
			a.join("m2", "x86_64", 1)
			a.load(preemptDB(mode))
			g := gangSpec("mpi", 2, fsm.RestartOnFailure)
			g.Queue = "LONG"
			a.mustOK(fsm.SubmitGangType, fsm.Submit{At: at(1), Owner: "alice", Spec: g})
			a.place(asg(1, 0, "m1"), asg(1, 1, "m2"))
			a.register(1, 0, "m1", 100)
			a.register(1, 1, "m2", 101)
			a.mustOK(fsm.SubmitType, fsm.Submit{At: at(6), Owner: "bob", Spec: inQueue(spec("debug", 1), "DEBUG", "")})
			if res := a.mustOK(fsm.PreemptType, fsm.Preempt{At: at(7), Preemptor: 2, Victims: victims([3]uint64{1, 0, 1})}); res.Affected != 0 {
				t.Fatalf("half a gang preempted")
			}
			if res := a.mustOK(fsm.PreemptType, fsm.Preempt{At: at(7), Preemptor: 2, Victims: victims([3]uint64{1, 0, 1}, [3]uint64{1, 1, 1})}); res.Affected != 2 {
				t.Fatalf("whole gang: got affected %d, want 2", res.Affected)
			}
			if mode == fsm.PreemptSuspend {
				wantStates(t, a, 1, fsm.InstanceSuspended)
				return
			}
			a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(9), JobID: 1, Instance: 0, Attempt: 1, Machine: "m1", Signal: "TERM"})
			// One end of a preempted gang breaks nothing: the other is
			// still stopping, not asked again.
			if in := a.instance(1, 1); in.State != fsm.InstanceRunning || in.RestartRequested || in.KillRequested {
				t.Fatalf("other gang instance: got %s restart %v kill %v, want running, stopping for the preemption only", in.State, in.RestartRequested, in.KillRequested)
			}
			a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(9), JobID: 1, Instance: 1, Attempt: 1, Machine: "m2", Signal: "KILL"})
			wantStates(t, a, 1, fsm.InstanceQueued)
			for i := range 2 {
				if in := a.instance(1, i); in.Restarts != 0 || in.Attempt != 2 {
					t.Errorf("instance %d: got attempt %d restarts %d, want 2 and 0", i, in.Attempt, in.Restarts)
				}
			}
		})
	}
}

// TestPreemptInterleavings applies seeded random interleavings of
// Preempt (both modes, whole and partial gangs), resumes, placements,
// attempt starts and ends (clean, failed, signalled), machines leaving,
// their leases expiring and being restored, and checks after every entry: the indexes agree with the
// records (lent instances counted in no machine), no machine runs more
// than its slots, an instance's current attempt is active only once
// every earlier one has ended, a gang is lent or stopping whole, and
// each end adds a restart exactly when the policy counts it: a preempted
// end never does, and queues the instance again.
func TestPreemptInterleavings(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			interleave(t, seed, 400)
		})
	}
}

func interleave(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 44))
	a := newApplier(t)
	machines := []string{"m1", "m2", "m3"}
	for _, m := range machines {
		a.join(m, "x86_64", 2)
	}
	db := preemptDB(fsm.PreemptRequeue)
	db.Queues = append(db.Queues, fsm.DeclaredQueue{Name: "DEBUGS", Priority: 10, Preempt: fsm.PreemptSuspend})
	a.load(db)
	// LONG: two gangs of 2 and three singles, all restartable on failure
	// (max 2 restarts); DEBUG and DEBUGS: two preemptors each.
	long := []uint64{}
	for i := range 2 {
		g := gangSpec(fmt.Sprintf("gang%d", i), 2, fsm.RestartOnFailure)
		g.Queue, g.MaxRestarts = "LONG", 2
		long = append(long, a.mustOK(fsm.SubmitGangType, fsm.Submit{At: at(1), Owner: "alice", Spec: g}).JobID)
	}
	for i := range 3 {
		s := inQueue(spec(fmt.Sprintf("long%d", i), 1), "LONG", fsm.RestartOnFailure)
		s.MaxRestarts = 2
		long = append(long, a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID)
	}
	var debug []uint64
	for _, q := range []string{"DEBUG", "DEBUG", "DEBUGS", "DEBUGS"} {
		debug = append(debug, a.mustOK(fsm.SubmitType, fsm.Submit{At: at(2), Owner: "bob", Spec: inQueue(spec("dbg", 1), q, "")}).JobID)
	}
	down, unreachable := map[string]bool{}, map[string]bool{}
	preempted, resumed := 0, 0
	defer func() { t.Logf("%d instances preempted, %d resumed", preempted, resumed) }()
	for step := range steps {
		var jobs []*fsm.Job
		a.f.Read(func(v fsm.View) {
			for _, j := range v.Jobs() {
				c := *j
				c.Instances = slices.Clone(j.Instances)
				jobs = append(jobs, &c)
			}
		})
		at := at(10 + step)
		switch op := r.IntN(9); op {
		case 8: // more work for LONG: a single or a gang
			sp := inQueue(spec("more", 1), "LONG", fsm.RestartOnFailure)
			typ := fsm.SubmitType
			if r.IntN(2) == 0 {
				sp, typ = gangSpec("moregang", 2, fsm.RestartOnFailure), fsm.SubmitGangType
				sp.Queue = "LONG"
			}
			sp.MaxRestarts = 2
			long = append(long, a.mustOK(typ, fsm.Submit{At: at, Owner: "alice", Spec: sp}).JobID)
		case 0, 1: // place a queued job (a gang whole) on random machines
			j := jobs[r.IntN(len(jobs))]
			var as []fsm.Assignment
			for _, in := range j.Instances {
				if in.State == fsm.InstanceQueued {
					as = append(as, fsm.Assignment{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: machines[r.IntN(3)], Key: fsm.AnyKey})
				}
			}
			a.mustOK(fsm.PlaceType, fsm.Place{At: at, Assignments: as})
		case 2: // an attempt starts
			j, in, ok := pick(r, jobs, func(in fsm.Instance) bool { return in.State == fsm.InstancePlaced })
			if !ok {
				continue
			}
			a.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: in.Machine, PID: 1000 + step})
		case 3: // an attempt ends: cleanly, failed or signalled
			j, in, ok := pick(r, jobs, func(in fsm.Instance) bool { return in.Active() && in.Machine != "" })
			if !ok {
				continue
			}
			c := fsm.ChildTerm{At: at, JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: in.Machine}
			switch r.IntN(3) {
			case 1:
				c.ExitCode = 1
			case 2:
				c.Signal = "TERM"
			}
			// The restart policy counts a failed or signalled end that was
			// not asked for (netkill, a restart, a preemption), up to 2.
			counts := !j.KillRequested && !in.KillRequested && !in.RestartRequested && in.Preempt != fsm.PreemptRequeue &&
				(c.ExitCode != 0 || c.Signal != "") && in.Restarts < 2 && j.Spec.Restartable()
			a.apply(fsm.ChildTermType, c)
			after := a.instance(j.ID, in.Index)
			want := in.Restarts
			if counts {
				want++
			}
			if after.Restarts != want {
				t.Fatalf("step %d: %d/%d (preempt %q) ended %+v: restarts %d, want %d", step, j.ID, in.Index, in.Preempt, c, after.Restarts, want)
			}
			if in.Preempt == fsm.PreemptRequeue && !in.KillRequested {
				if h := after.History; len(h) == 0 || h[len(h)-1].State != fsm.InstancePreempted || after.State != fsm.InstanceQueued {
					t.Fatalf("step %d: preempted %d/%d ended as %s with history %+v, want queued again after a preempted end", step, j.ID, in.Index, after.State, h)
				}
			}
		case 4, 5: // a preemptor takes random running LONG instances
			p := debug[r.IntN(len(debug))]
			var vs []fsm.Victim
			for _, j := range jobs {
				if !slices.Contains(long, j.ID) {
					continue
				}
				for _, in := range j.Instances {
					if in.State == fsm.InstanceRunning && r.IntN(3) > 0 {
						vs = append(vs, fsm.Victim{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt})
					}
				}
			}
			preempted += a.mustOK(fsm.PreemptType, fsm.Preempt{At: at, Preemptor: p, Victims: vs}).Affected
		case 6: // resume a job's lent instances
			for _, j := range jobs {
				var vs []fsm.Victim
				for _, in := range j.Instances {
					if in.Lent() {
						vs = append(vs, fsm.Victim{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt})
					}
				}
				if len(vs) > 0 {
					resumed += a.mustOK(fsm.PreemptType, fsm.Preempt{At: at, Resume: true, Victims: vs}).Affected
					break
				}
			}
		case 7: // a machine leaves the pool or its lease expires, or it comes back
			m := machines[r.IntN(3)]
			switch {
			case down[m] && unreachable[m]:
				var back []fsm.AttemptRef
				for _, j := range jobs {
					for _, in := range j.Instances {
						if in.Machine == m && in.State == fsm.InstanceUnknown && r.IntN(4) > 0 {
							back = append(back, fsm.AttemptRef{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt})
						}
					}
				}
				a.mustOK(fsm.LeaseRestoredType, fsm.LeaseRestored{At: at, Machine: m, Running: back})
			case down[m]:
				a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: facts(m, "x86_64", 2)})
			case r.IntN(2) == 0:
				a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at, Machine: m})
				unreachable[m] = true
			default:
				a.mustOK(fsm.StubLeaveType, fsm.StubLeave{At: at, Machine: m, Reason: "test"})
			}
			if down[m] {
				unreachable[m] = false
			}
			down[m] = !down[m]
		}
		checkInvariants(t, a.f, step)
		checkPreemptions(t, a, step, machines)
		if t.Failed() {
			t.FailNow()
		}
	}
}

// pick returns a random instance that ok accepts, and its job.
func pick(r *rand.Rand, jobs []*fsm.Job, ok func(fsm.Instance) bool) (*fsm.Job, fsm.Instance, bool) {
	type found struct {
		j  *fsm.Job
		in fsm.Instance
	}
	var all []found
	for _, j := range jobs {
		for _, in := range j.Instances {
			if ok(in) {
				all = append(all, found{j, in})
			}
		}
	}
	if len(all) == 0 {
		return nil, fsm.Instance{}, false
	}
	f := all[r.IntN(len(all))]
	return f.j, f.in, true
}

// checkPreemptions checks what preemption must keep after every entry.
func checkPreemptions(t *testing.T, a *applier, step int, machines []string) {
	t.Helper()
	a.f.Read(func(v fsm.View) {
		for _, m := range machines {
			if mc, ok := v.Machine(m); ok && mc.State == fsm.MachineUp && v.Running(m) > mc.Slots() {
				t.Errorf("step %d: machine %s runs %d of %d slots", step, m, v.Running(m), mc.Slots())
			}
		}
		for _, j := range v.Jobs() {
			lent, stopping, active := 0, 0, 0
			for _, in := range j.Instances {
				if in.Active() {
					active++
				}
				if in.Lent() {
					lent++
				}
				if in.Preempt == fsm.PreemptRequeue && in.Active() {
					stopping++
				}
				if uint64(len(in.History)) != in.Attempt-1 {
					t.Errorf("step %d: %d/%d attempt %d with %d earlier attempts recorded", step, j.ID, in.Index, in.Attempt, len(in.History))
				}
				for _, h := range in.History {
					if h.EndedAt.IsZero() && h.State != fsm.InstanceLost {
						t.Errorf("step %d: %d/%d: earlier attempt %d never ended (%s) while attempt %d is current", step, j.ID, in.Index, h.Attempt, h.State, in.Attempt)
					}
				}
			}
			if j.Spec.Gang && (lent != 0 && lent != active || stopping != 0 && stopping != active) {
				t.Errorf("step %d: gang %d has %d lent and %d stopping of %d active instances", step, j.ID, lent, stopping, active)
			}
		}
	})
}
