package fsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// gangSpec is a gang of n instances of /bin/true with restart policy
// restart ("" for none).
func gangSpec(name string, n int, restart string) fsm.JobSpec {
	s := spec(name, n)
	s.Gang = true
	s.Restart = restart
	return s
}

// gangPool joins m1..m3 with one slot each and submits a gang of three
// (job 1).
func gangPool(t *testing.T, restart string) *applier {
	t.Helper()
	a := newApplier(t)
	for _, m := range []string{"m1", "m2", "m3"} {
		a.join(m, "x86_64", 1)
	}
	if res := a.mustOK(fsm.SubmitGangType, fsm.Submit{At: at(1), Owner: "alice", Spec: gangSpec("mpi", 3, restart)}); res.JobID != 1 {
		t.Fatalf("got job %d, want 1", res.JobID)
	}
	return a
}

// gangStates is the states of job's instances, in instance order.
func gangStates(a *applier, job uint64) []string {
	var out []string
	for _, in := range a.job(job).Instances {
		out = append(out, in.State)
	}
	return out
}

// wantStates fails unless every instance of job is in state.
func wantStates(t *testing.T, a *applier, job uint64, state string) {
	t.Helper()
	for i, s := range gangStates(a, job) {
		if s != state {
			t.Errorf("job %d instance %d: got state %q, want %q (all: %v)", job, i, s, state, gangStates(a, job))
		}
	}
}

func TestGangPlacedWholeOrNone(t *testing.T) {
	whole := []fsm.Assignment{asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m3")}
	for _, tc := range []struct {
		name  string
		setup func(a *applier)
		plan  []fsm.Assignment
		want  string // the state of every instance after the Place
	}{
		{"all placeable", func(*applier) {}, whole, fsm.InstancePlaced},
		{"one machine full", func(a *applier) {
			id := a.submit("other", 1)
			a.place(asg(id, 0, "m3"))
		}, whole, fsm.InstanceQueued},
		{"one instance missing", func(*applier) {}, whole[:2], fsm.InstanceQueued},
		{"an instance twice", func(*applier) {}, []fsm.Assignment{asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 1, "m3")}, fsm.InstanceQueued},
		{"two on a one-slot machine", func(*applier) {}, []fsm.Assignment{asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m2")}, fsm.InstanceQueued},
		{"a machine down", func(a *applier) { a.leave("m2", "gone") }, whole, fsm.InstanceQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := gangPool(t, "")
			tc.setup(a)
			res := a.place(tc.plan...)
			wantStates(t, a, 1, tc.want)
			if tc.want == fsm.InstancePlaced && (len(res.Accepted) != 3 || res.Dropped != 0) {
				t.Errorf("got Accepted %v Dropped %d, want 3 and 0", res.Accepted, res.Dropped)
			}
			if tc.want == fsm.InstanceQueued && (len(res.Accepted) != 0 || res.Dropped != len(tc.plan)) {
				t.Errorf("got Accepted %v Dropped %d, want none and %d", res.Accepted, res.Dropped, len(tc.plan))
			}
		})
	}
}

// TestGangInterleavings applies every order of three frees, a small job's
// submit and placement, and the gang's placement tried after each step:
// the gang is always wholly queued or wholly placed, no machine runs more
// than its slot, and two replicas applying the same order agree.
func TestGangInterleavings(t *testing.T) {
	steps := []string{"free m1", "free m2", "free m3", "small"}
	var orders [][]int
	var permute func(prefix []int, rest []int)
	permute = func(prefix, rest []int) {
		if len(rest) == 0 {
			orders = append(orders, prefix)
			return
		}
		for i := range rest {
			next := append(append([]int{}, rest[:i]...), rest[i+1:]...)
			permute(append(append([]int{}, prefix...), rest[i]), next)
		}
	}
	permute(nil, []int{0, 1, 2, 3})
	for _, order := range orders {
		var names []string
		for _, i := range order {
			names = append(names, steps[i])
		}
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			replicas := []*applier{newApplier(t), newApplier(t)}
			for _, a := range replicas {
				for _, m := range []string{"m1", "m2", "m3"} {
					a.join(m, "x86_64", 1)
				}
				for _, m := range []string{"m1", "m2", "m3"} { // jobs 1..3 hold every machine
					id := a.submit("busy-"+m, 1)
					a.place(asg(id, 0, m))
				}
				a.mustOK(fsm.SubmitGangType, fsm.Submit{At: at(1), Owner: "alice", Spec: gangSpec("mpi", 3, "")}) // job 4
			}
			small := uint64(0)
			for _, i := range order {
				for _, a := range replicas {
					switch i {
					case 0, 1, 2:
						a.term(uint64(i+1), 0, fmt.Sprintf("m%d", i+1), 0)
					case 3:
						small = a.submit("small", 1)
						// The small job takes the first free machine, if any.
						for _, m := range []string{"m1", "m2", "m3"} {
							if a.running(m) == 0 {
								a.place(asg(small, 0, m))
								break
							}
						}
					}
					a.place(asg(4, 0, "m1"), asg(4, 1, "m2"), asg(4, 2, "m3"))
					states := gangStates(a, 4)
					for _, s := range states[1:] {
						if s != states[0] {
							t.Fatalf("after %v: gang instances in states %v, want all the same", names, states)
						}
					}
					for _, m := range []string{"m1", "m2", "m3"} {
						if n := a.running(m); n > 1 {
							t.Fatalf("after %v: %s runs %d, more than its one slot", names, m, n)
						}
					}
				}
				if a, b := stateBytes(t, replicas[0].f), stateBytes(t, replicas[1].f); !bytes.Equal(a, b) {
					t.Fatalf("replicas differ after %v", names)
				}
			}
			// The gang runs by the end only when the small job got no
			// machine the gang needed before all three had freed.
			got := gangStates(replicas[0], 4)[0]
			smallIn := replicas[0].instance(small, 0)
			if want := fsm.InstancePlaced; smallIn.State == fsm.InstanceQueued && got != want {
				t.Errorf("small job waits and gang is %q, want %q", got, want)
			}
		})
	}
}

func TestGangStopsTogether(t *testing.T) {
	a := gangPool(t, "")
	a.place(asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m3"))
	for i, m := range []string{"m1", "m2", "m3"} {
		a.register(1, i, m, 100+i)
	}
	a.term(1, 1, "m2", 3) // instance 1 fails
	for _, i := range []int{0, 2} {
		if in := a.instance(1, i); !in.KillRequested || in.State != fsm.InstanceRunning {
			t.Errorf("instance %d: got state %q KillRequested %v, want running and true", i, in.State, in.KillRequested)
		}
	}
	a.term(1, 0, "m1", -1)
	a.term(1, 2, "m3", -1)
	for i, want := range []string{fsm.InstanceKilled, fsm.InstanceFailed, fsm.InstanceKilled} {
		if in := a.instance(1, i); in.State != want || in.Attempt != 1 {
			t.Errorf("instance %d: got state %q attempt %d, want %q and 1", i, in.State, in.Attempt, want)
		}
	}
	if got := a.job(1).State(); got != fsm.JobFailed {
		t.Errorf("got job state %q, want %q", got, fsm.JobFailed)
	}
}

func TestGangCleanExitLeavesOthers(t *testing.T) {
	a := gangPool(t, "on-failure")
	a.place(asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m3"))
	for i, m := range []string{"m1", "m2", "m3"} {
		a.register(1, i, m, 100+i)
	}
	a.term(1, 0, "m1", 0)
	for _, i := range []int{1, 2} {
		if in := a.instance(1, i); in.KillRequested || in.RestartRequested {
			t.Errorf("instance %d: got KillRequested %v RestartRequested %v after a clean exit of another, want neither", i, in.KillRequested, in.RestartRequested)
		}
	}
}

// TestGangRestartsTogether: with a restart policy, one failure restarts
// every instance as a new attempt, and the new attempts cannot be placed
// until every old attempt's end is committed.
func TestGangRestartsTogether(t *testing.T) {
	a := gangPool(t, "on-failure")
	a.place(asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m3"))
	for i, m := range []string{"m1", "m2", "m3"} {
		a.register(1, i, m, 100+i)
	}
	a.term(1, 1, "m2", 3)
	if in := a.instance(1, 1); in.State != fsm.InstanceQueued || in.Attempt != 2 {
		t.Fatalf("failed instance: got state %q attempt %d, want queued and 2", in.State, in.Attempt)
	}
	for _, i := range []int{0, 2} {
		if in := a.instance(1, i); !in.RestartRequested || in.Attempt != 1 {
			t.Errorf("instance %d: got RestartRequested %v attempt %d, want true and 1", i, in.RestartRequested, in.Attempt)
		}
	}
	// Fenced: the new attempts are not placed while an old one may run.
	second := func(inst int, m string) fsm.Assignment {
		return fsm.Assignment{JobID: 1, Instance: inst, Attempt: 2, Machine: m, Key: fsm.AnyKey}
	}
	late := at(100)
	plan := fsm.Place{At: late, Assignments: []fsm.Assignment{second(0, "m2"), second(1, "m1"), second(2, "m3")}}
	if res := a.mustOK(fsm.PlaceType, plan); len(res.Accepted) != 0 {
		t.Fatalf("placed %v while old attempts run, want none", res.Accepted)
	}
	a.term(1, 0, "m1", -1)
	if res := a.mustOK(fsm.PlaceType, plan); len(res.Accepted) != 0 {
		t.Fatalf("placed %v while instance 2's old attempt runs, want none", res.Accepted)
	}
	a.term(1, 2, "m3", -1)
	for i := range 3 {
		if in := a.instance(1, i); in.State != fsm.InstanceQueued || in.Attempt != 2 {
			t.Errorf("instance %d: got state %q attempt %d, want queued and 2", i, in.State, in.Attempt)
		}
	}
	if res := a.mustOK(fsm.PlaceType, plan); len(res.Accepted) != 3 {
		t.Fatalf("got Accepted %v Dropped %d, want all three", res.Accepted, res.Dropped)
	}
	wantStates(t, a, 1, fsm.InstancePlaced)
}

// TestGangLeaseExpiredRestarts: an instance that loses its machine
// restarts the gang.
func TestGangLeaseExpiredRestarts(t *testing.T) {
	a := gangPool(t, "always")
	a.place(asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m3"))
	for i, m := range []string{"m1", "m2", "m3"} {
		a.register(1, i, m, 100+i)
	}
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(20), Machine: "m3"})
	if in := a.instance(1, 2); in.State != fsm.InstanceQueued || in.Attempt != 2 {
		t.Fatalf("instance 2: got state %q attempt %d, want queued and 2", in.State, in.Attempt)
	}
	for _, i := range []int{0, 1} {
		if in := a.instance(1, i); !in.RestartRequested {
			t.Errorf("instance %d: got RestartRequested false, want true", i)
		}
	}
}

// TestGangStubLeaveStops: an instance lost with its machine (no restart
// policy) stops the others.
func TestGangStubLeaveStops(t *testing.T) {
	a := gangPool(t, "")
	a.place(asg(1, 0, "m1"), asg(1, 1, "m2"), asg(1, 2, "m3"))
	for i, m := range []string{"m1", "m2", "m3"} {
		a.register(1, i, m, 100+i)
	}
	a.leave("m2", "crashed")
	for _, i := range []int{0, 2} {
		if in := a.instance(1, i); !in.KillRequested {
			t.Errorf("instance %d: got KillRequested false, want true", i)
		}
	}
}

// TestGangGeneratedLog replays the generator's random log (frees, kills,
// lost machines and plans of every shape interleaved) and checks after
// every entry that each Place or SubmitPlace accepted a gang job's
// assignments for all its instances or none of them.
func TestGangGeneratedLog(t *testing.T) {
	for _, seed := range []uint64{3, 12, 77} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			g := newGenerator(t, seed)
			for range 3500 { // gangs come after step 2000
				g.next()
			}
			replay := newApplier(t)
			gangsPlaced := 0
			for _, data := range g.log {
				res := replay.raw(data)
				typ := fsm.MessageType(data[0])
				if typ != fsm.PlaceType && typ != fsm.SubmitPlaceType {
					continue
				}
				accepted := map[uint64]int{}
				for _, a := range res.Accepted {
					accepted[a.JobID]++
				}
				if typ == fsm.SubmitPlaceType && len(res.Accepted) > 0 {
					accepted = map[uint64]int{res.JobID: len(res.Accepted)}
				}
				for id, n := range accepted {
					var j fsm.Job
					var ok bool
					replay.f.Read(func(v fsm.View) {
						var p *fsm.Job
						if p, ok = v.Job(id); ok {
							j = *p
						}
					})
					if !ok || !j.Spec.Gang {
						continue
					}
					gangsPlaced++
					if n != len(j.Instances) {
						t.Fatalf("entry %d placed %d of gang job %d's %d instances", res.Index, n, id, len(j.Instances))
					}
				}
			}
			t.Logf("%d gang placements checked", gangsPlaced)
		})
	}
}

// TestPlaceDedicated: the FSM keeps a dedicated queue's machines to one
// owner whatever the plan says: another owner's job is dropped where a
// dedicated job runs, and a dedicated job where another owner's runs.
func TestPlaceDedicated(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.join("m2", "x86_64", 4)
	a.mustOK(fsm.SetQueueType, fsm.SetQueue{At: at(1), By: "admin", Queue: fsm.DeclaredQueue{Name: "DED", Policy: "dedicated"}})
	sub := func(owner, q string) uint64 {
		s := spec("", 1)
		s.Queue = q
		return a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: owner, Spec: s}).JobID
	}
	ann := sub("ann", "DED")
	bob := sub("bob", "")
	annToo := sub("ann", "")
	bobDed := sub("bob", "DED")
	if res := a.place(asg(ann, 0, "m1")); len(res.Accepted) != 1 {
		t.Fatalf("ann's dedicated job on an empty machine: dropped")
	}
	if res := a.place(asg(bob, 0, "m1")); len(res.Accepted) != 0 {
		t.Errorf("bob's job placed beside ann's dedicated job")
	}
	if res := a.place(asg(annToo, 0, "m1")); len(res.Accepted) != 1 {
		t.Errorf("ann's other job dropped beside her own dedicated job")
	}
	if res := a.place(asg(bob, 0, "m2")); len(res.Accepted) != 1 {
		t.Fatalf("bob's job on a free machine: dropped")
	}
	if res := a.place(asg(bobDed, 0, "m1")); len(res.Accepted) != 0 {
		t.Errorf("bob's dedicated job placed where ann's jobs run")
	}
	if res := a.place(asg(bobDed, 0, "m2")); len(res.Accepted) != 1 {
		t.Errorf("bob's dedicated job dropped where only his job runs")
	}
}
