package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// submitAfter submits a one-instance job with the given dependencies and
// returns the result.
func (a *applier) submitAfter(name string, after, afterOK, afterNotOK []uint64) *fsm.Result {
	a.tb.Helper()
	return a.apply(fsm.SubmitAfterType, fsm.Submit{At: at(1), Owner: "alice", Spec: withDeps(spec(name, 1), after, afterOK, afterNotOK)})
}

// runToEnd places, starts and ends instance 0 of job id on m1 with code.
func (a *applier) runToEnd(id uint64, code int) {
	a.tb.Helper()
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", int(id))
	a.term(id, 0, "m1", code)
}

func TestDependencyOutcomes(t *testing.T) {
	tests := []struct {
		name string
		kind string // after, afterok or afternotok
		code int    // the dependency's exit code; -1: killed while queued
		want string // the dependent's job state once the dependency ended
	}{
		{"after a success", fsm.DepAfter, 0, fsm.JobQueued},
		{"after a failure", fsm.DepAfter, 1, fsm.JobQueued},
		{"after a kill", fsm.DepAfter, -1, fsm.JobQueued},
		{"afterok a success", fsm.DepAfterOK, 0, fsm.JobQueued},
		{"afterok a failure", fsm.DepAfterOK, 1, fsm.JobCancelled},
		{"afterok a kill", fsm.DepAfterOK, -1, fsm.JobCancelled},
		{"afternotok a success", fsm.DepAfterNotOK, 0, fsm.JobCancelled},
		{"afternotok a failure", fsm.DepAfterNotOK, 1, fsm.JobQueued},
		{"afternotok a kill", fsm.DepAfterNotOK, -1, fsm.JobQueued},
	}
	for _, tc := range tests {
		submitB := func(a *applier, id uint64) uint64 {
			ids := []uint64{id}
			switch tc.kind {
			case fsm.DepAfter:
				return a.submitAfter("b", ids, nil, nil).JobID
			case fsm.DepAfterOK:
				return a.submitAfter("b", nil, ids, nil).JobID
			}
			return a.submitAfter("b", nil, nil, ids).JobID
		}
		end := func(a *applier, id uint64) {
			if tc.code < 0 {
				a.mustOK(fsm.KillType, fsm.Kill{At: at(5), JobID: id, By: "alice"})
				return
			}
			a.runToEnd(id, tc.code)
		}
		t.Run(tc.name+" ending later", func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			dep := a.submit("dep", 1)
			b := submitB(a, dep)
			if got := a.job(b).State(); got != fsm.JobHeld {
				t.Fatalf("before the dependency ends: got %s, want %s", got, fsm.JobHeld)
			}
			if res := a.place(asg(b, 0, "m1")); len(res.Accepted) != 0 {
				t.Errorf("a held instance was placed: %v", res.Accepted)
			}
			end(a, dep)
			j := a.job(b)
			if got := j.State(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if tc.want == fsm.JobCancelled {
				want := fmt.Sprintf("dependency: %s job %d (dep) ", tc.kind, dep)
				if r := j.Instances[0].Reason; !strings.HasPrefix(r, want) {
					t.Errorf("got reason %q, want it to start %q", r, want)
				}
			}
		})
		t.Run(tc.name+" already ended", func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			dep := a.submit("dep", 1)
			end(a, dep)
			b := submitB(a, dep)
			if got := a.job(b).State(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDependencyChainAndCascade(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	first := a.submit("a", 1)
	second := a.submitAfter("b", nil, []uint64{first}, nil).JobID
	third := a.submitAfter("c", nil, []uint64{second}, nil).JobID
	cleanup := a.submitAfter("cleanup", []uint64{third}, nil, nil).JobID
	onFail := a.submitAfter("onfail", nil, nil, []uint64{second}).JobID
	a.runToEnd(first, 0)
	if got := a.job(second).State(); got != fsm.JobQueued {
		t.Fatalf("b after a succeeded: got %s, want queued", got)
	}
	if got := a.job(third).State(); got != fsm.JobHeld {
		t.Fatalf("c while b waits: got %s, want held", got)
	}
	a.runToEnd(second, 2) // b fails: c never runs, so cleanup's dependency ends too
	for _, tc := range []struct {
		id   uint64
		want string
	}{{third, fsm.JobCancelled}, {cleanup, fsm.JobQueued}, {onFail, fsm.JobQueued}} {
		if got := a.job(tc.id).State(); got != tc.want {
			t.Errorf("job %d: got %s, want %s", tc.id, got, tc.want)
		}
	}
	var kinds []string
	a.f.Read(func(v fsm.View) {
		for _, ev := range v.EventsSince(0) {
			if ev.Kind == fsm.EventJobCancelled || ev.Kind == fsm.EventJobReleased {
				kinds = append(kinds, fmt.Sprintf("%s %d", ev.Kind, ev.Job))
			}
		}
	})
	want := []string{
		fmt.Sprintf("job-released %d", second),
		fmt.Sprintf("job-cancelled %d", third),
		fmt.Sprintf("job-released %d", cleanup),
		fmt.Sprintf("job-released %d", onFail),
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("got events %v, want %v", kinds, want)
	}
}

func TestKillHeldJob(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	dep := a.submit("dep", 1)
	held := a.submitAfter("held", []uint64{dep}, nil, nil).JobID
	next := a.submitAfter("next", nil, []uint64{held}, nil).JobID
	res := a.mustOK(fsm.KillType, fsm.Kill{At: at(5), JobID: held, By: "alice"})
	if res.Dequeued != 1 {
		t.Errorf("got Dequeued %d, want 1", res.Dequeued)
	}
	if got := a.job(held).State(); got != fsm.JobKilled {
		t.Errorf("killed held job: got %s, want killed", got)
	}
	if got := a.job(next).State(); got != fsm.JobCancelled {
		t.Errorf("afterok of the killed job: got %s, want cancelled", got)
	}
	a.runToEnd(dep, 0) // its end finds nothing left to release
	if got := a.job(held).State(); got != fsm.JobKilled {
		t.Errorf("after the dependency ended: got %s, want still killed", got)
	}
}

// TestDependenciesCannotCycle checks that a job can depend only on jobs
// that exist before it: on itself (the next id) or a later one it is
// refused, so the dependency graph has no cycle.
func TestDependenciesCannotCycle(t *testing.T) {
	a := newApplier(t)
	first := a.submit("a", 1)
	for _, id := range []uint64{first + 1, first + 2, 0} {
		res := a.submitAfter("self", []uint64{id}, nil, nil)
		if !errors.Is(res.Err, fsm.ErrNoSuchJob) || !errors.Is(res.Err, fsm.ErrInvalidSpec) {
			t.Errorf("after=%d: got %v, want ErrInvalidSpec and ErrNoSuchJob", id, res.Err)
		}
	}
	if res := a.submitAfter("ok", []uint64{first}, nil, nil); res.Err != nil || res.JobID != first+1 {
		t.Errorf("after=%d: got %d %v, want job %d", first, res.JobID, res.Err, first+1)
	}
}

// depWorld is a random dependency graph: job i+1 (ids from 1) has the
// dependencies of deps[i] and, when it runs, exits with codes[i].
type depWorld struct {
	deps  []fsm.JobSpec
	codes []int
}

func newDepWorld(r *rand.Rand, n int) depWorld {
	var w depWorld
	for i := range n {
		s := spec(fmt.Sprintf("j%d", i+1), 1+r.IntN(2))
		for range r.IntN(3) {
			if i == 0 {
				break
			}
			id := uint64(1 + r.IntN(i))
			switch r.IntN(3) {
			case 0:
				s.After = append(s.After, id)
			case 1:
				s.AfterOK = append(s.AfterOK, id)
			default:
				s.AfterNotOK = append(s.AfterNotOK, id)
			}
		}
		w.deps = append(w.deps, s)
		w.codes = append(w.codes, []int{0, 0, 1}[r.IntN(3)])
	}
	return w
}

// depDriver builds a log for a world: submit every job, then repeatedly
// run a random queued instance to its end with its job's code (and now
// and then kill a random job, or repeat an earlier entry), until nothing
// is queued.
type depDriver struct {
	a   *applier
	r   *rand.Rand
	log [][]byte
}

func (d *depDriver) emit(typ fsm.MessageType, body any) *fsm.Result {
	data := encode(d.a.tb, command{typ, body})
	d.log = append(d.log, data)
	return d.a.raw(data)
}

func (d *depDriver) drive(w depWorld, kills bool) {
	d.emit(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: facts("m1", "x86_64", 64)})
	for i, s := range w.deps {
		typ := fsm.SubmitType
		if s.HasDependencies() {
			typ = fsm.SubmitAfterType
		}
		d.emit(typ, fsm.Submit{At: at(1 + i), Owner: "alice", Spec: s})
	}
	submitted := len(d.log)
	for step := 10; ; step++ {
		var queued []fsm.InstanceRef
		d.a.f.Read(func(v fsm.View) { queued = v.Queued() })
		if len(queued) == 0 {
			return
		}
		switch {
		case kills && d.r.IntN(15) == 0:
			d.emit(fsm.KillType, fsm.Kill{At: at(step), JobID: uint64(1 + d.r.IntN(len(w.deps))), By: "alice"})
			continue
		case len(d.log) > submitted && d.r.IntN(10) == 0:
			// A duplicated proposal (not a Submit: without an idempotency
			// key that is a new job).
			dup := d.log[submitted+d.r.IntN(len(d.log)-submitted)]
			d.log = append(d.log, dup)
			d.a.raw(dup)
			continue
		}
		ref := queued[d.r.IntN(len(queued))]
		code := w.codes[ref.JobID-1]
		d.emit(fsm.PlaceType, fsm.Place{At: at(step), Assignments: []fsm.Assignment{asg(ref.JobID, ref.Instance, "m1")}})
		d.emit(fsm.ChildRegisterType, fsm.ChildRegister{At: at(step), JobID: ref.JobID, Instance: ref.Instance, Attempt: 1, Machine: "m1", PID: step})
		d.emit(fsm.ChildTermType, fsm.ChildTerm{At: at(step), JobID: ref.JobID, Instance: ref.Instance, Attempt: 1, Machine: "m1", ExitCode: code})
	}
}

// checkDependencyInvariants checks every job against its dependencies: a
// held job has one still undecided; a cancelled one says which ruled it
// out; an instance that started did so after every dependency ended.
func checkDependencyInvariants(tb testing.TB, f *fsm.FSM) {
	tb.Helper()
	f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			var waiting bool
			for _, dep := range j.Spec.Dependencies() {
				other, _ := v.Job(dep.JobID)
				switch dep.Verdict(other) {
				case fsm.DepWaiting:
					waiting = true
				}
			}
			switch j.State() {
			case fsm.JobHeld:
				if !waiting {
					tb.Errorf("job %d held with every dependency decided", j.ID)
				}
			case fsm.JobCancelled:
				if !strings.HasPrefix(j.Instances[0].Reason, "dependency: ") {
					tb.Errorf("job %d cancelled with reason %q", j.ID, j.Instances[0].Reason)
				}
			}
			for _, in := range j.Instances {
				if in.StartedAt.IsZero() {
					continue
				}
				if waiting {
					tb.Errorf("job %d instance %d started before its dependencies ended", j.ID, in.Index)
				}
				for _, dep := range j.Spec.Dependencies() {
					other, _ := v.Job(dep.JobID)
					for _, oi := range other.Instances {
						if oi.EndedAt.After(in.StartedAt) {
							tb.Errorf("job %d started at %v before dependency %d ended at %v", j.ID, in.StartedAt, other.ID, oi.EndedAt)
						}
					}
				}
			}
		}
	})
}

// outcomes is each job's final state.
func outcomes(f *fsm.FSM) []string {
	var out []string
	f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			out = append(out, j.State())
		}
	})
	return out
}

// TestPropertyDependencyOrders runs random dependency graphs with their
// ends in random orders: every order gives each job the same final state
// (whether it ran or was cancelled depends on how its dependencies ended,
// not when), no job is left held, and the invariants hold.
func TestPropertyDependencyOrders(t *testing.T) {
	for seed := range uint64(40) {
		w := newDepWorld(rand.New(rand.NewPCG(seed, 1)), 12)
		var want []string
		for order := range uint64(5) {
			d := &depDriver{a: newApplier(t), r: rand.New(rand.NewPCG(seed, 100+order))}
			d.drive(w, false)
			checkDependencyInvariants(t, d.a.f)
			got := outcomes(d.a.f)
			if slices.Contains(got, fsm.JobHeld) {
				t.Fatalf("seed %d order %d: a job is left held: %v", seed, order, got)
			}
			if order == 0 {
				want = got
			} else if !slices.Equal(got, want) {
				t.Fatalf("seed %d order %d: outcomes %v, want %v as in the first order", seed, order, got, want)
			}
		}
	}
}

// TestPropertyDependencyFailover replays logs of random dependency
// graphs, with kills and duplicated entries, on replicas that apply them
// one by one, in batches, or from a snapshot taken at a random point (a
// new leader's follower restored from its snapshot): every replica ends
// in the same state, byte for byte.
func TestPropertyDependencyFailover(t *testing.T) {
	for seed := range uint64(25) {
		r := rand.New(rand.NewPCG(seed, 2))
		w := newDepWorld(r, 15)
		d := &depDriver{a: newApplier(t), r: r}
		d.drive(w, true)
		checkDependencyInvariants(t, d.a.f)
		want := snapshotBytes(t, d.a.f)

		b := newApplier(t)
		for i, n := 0, 1; i < len(d.log); i, n = i+n, n%7+1 {
			b.batch(d.log[i:min(i+n, len(d.log))], false)
		}
		if got := snapshotBytes(t, b.f); !bytes.Equal(got, want) {
			t.Errorf("seed %d: the batched replica differs", seed)
		}
		// Two failovers: restore from a snapshot at one cut, apply on,
		// snapshot and restore again at a later cut.
		cuts := []int{r.IntN(len(d.log)), 0}
		cuts[1] = cuts[0] + r.IntN(len(d.log)-cuts[0]+1)
		c := newApplier(t)
		for i, data := range d.log {
			for _, cut := range cuts {
				if i == cut {
					c = &applier{tb: t, f: restored(t, snapshotBytes(t, c.f)), next: c.next}
				}
			}
			c.raw(data)
		}
		if got := snapshotBytes(t, c.f); !bytes.Equal(got, want) {
			t.Errorf("seed %d: the replica restored at %v differs", seed, cuts)
		}
	}
}

// A dependency whose attempt fails and is restarted by the same entry has
// not ended: its dependents stay held through the restart and are decided
// by the end of the attempt that ends it (found by the chaos suite: a
// job after=B started while B's second attempt ran).
func TestDependencyWaitsThroughARestart(t *testing.T) {
	for _, kind := range []string{fsm.DepAfter, fsm.DepAfterOK, fsm.DepAfterNotOK} {
		t.Run(kind, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			s := spec("dep", 1)
			s.Restart, s.MaxRestarts = fsm.RestartOnFailure, 3
			dep := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
			ids := []uint64{dep}
			var b uint64
			switch kind {
			case fsm.DepAfter:
				b = a.submitAfter("b", ids, nil, nil).JobID
			case fsm.DepAfterOK:
				b = a.submitAfter("b", nil, ids, nil).JobID
			default:
				b = a.submitAfter("b", nil, nil, ids).JobID
			}

			a.runToEnd(dep, 3) // attempt 1 fails; the policy restarts it
			if got := a.instance(dep, 0).Attempt; got != 2 {
				t.Fatalf("after a failed attempt 1 the dependency is at attempt %d, want 2 (restarted)", got)
			}
			if got := a.job(b).State(); got != fsm.JobHeld {
				t.Fatalf("while the dependency restarts: dependent %s, want %s", got, fsm.JobHeld)
			}

			// Placed once its restart backoff has passed.
			if res := a.mustOK(fsm.PlaceType, fsm.Place{At: at(10), PlannedAtIndex: a.next - 1, Assignments: []fsm.Assignment{{JobID: dep, Instance: 0, Attempt: 2, Machine: "m1", Key: fsm.AnyKey}}}); len(res.Accepted) != 1 {
				t.Fatalf("attempt 2 was not placed: %+v", res)
			}
			a.mustOK(fsm.ChildRegisterType, fsm.ChildRegister{At: at(11), JobID: dep, Instance: 0, Attempt: 2, Machine: "m1", PID: 77})
			a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(12), JobID: dep, Instance: 0, Attempt: 2, Machine: "m1", ExitCode: 0})
			want := fsm.JobQueued
			if kind == fsm.DepAfterNotOK {
				want = fsm.JobCancelled
			}
			if got := a.job(b).State(); got != want {
				t.Errorf("once attempt 2 exited 0: dependent %s, want %s", got, want)
			}
		})
	}
}
