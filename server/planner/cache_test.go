package planner_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// TestCacheAgainstNew drives one database through seeded random event
// sequences (submits of every kind of request to queues of every policy,
// the leader's own placements committed, registrations, ends, kills,
// restarts, machines lost, back, drained, unhealthy, asleep, new ones
// joining, database loads changing keys and attributes, reservations
// made and ended and coming into force with time, stubs going up and
// down, loads and idle times moving, and a restore from a snapshot), and
// after every event checks that a pass from the one Cache kept through
// it all plans exactly what a pass built from scratch (New) does: the
// same Place and the same preemption.
func TestCacheAgainstNew(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x36))
			c := planner.NewCache()
			w := newCacheWorld(t, rng)
			counts := map[string]int{}
			for step := range 400 {
				kind := w.step(step)
				counts[kind]++
				now := w.now
				w.fsms[0].Read(func(v fsm.View) {
					live := w.liveness(v)
					p := c.Pass(v, live, now)
					got := p.Place()
					gotPre, gotOK := p.Preemption()
					q := planner.New(v, live, now)
					want := q.Place()
					wantPre, wantOK := q.Preemption()
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d (%s): the Cache's pass placed\n%+v\nNew's\n%+v", step, kind, got, want)
					}
					if gotOK != wantOK || !reflect.DeepEqual(gotPre, wantPre) {
						t.Fatalf("step %d (%s): the Cache's pass preempts %v %+v, New's %v %+v", step, kind, gotOK, gotPre, wantOK, wantPre)
					}
					w.plan = got
				})
			}
			t.Logf("seed %d: %v; Cache rebuilt %d, views refreshed %d", seed, counts, c.Rebuilt, c.Refreshed)
			for _, k := range []string{"place", "end", "machine lost", "new machine", "load database", "reserve", "restore", "liveness"} {
				if counts[k] == 0 {
					t.Errorf("the run had no %s: it exercised too little (%v)", k, counts)
				}
			}
			if c.Refreshed == 0 || c.Rebuilt < 2 {
				t.Errorf("the Cache rebuilt %d times and refreshed %d views: the run did not exercise it", c.Rebuilt, c.Refreshed)
			}
		})
	}
}

// cacheWorld is TestCacheAgainstNew's pool: one FSM, the stubs' liveness
// as the leader would see it, and the clock. Its database is a group of
// one replica (replicas: apply, and replace for a restore).
type cacheWorld struct {
	*replicas
	rng   *rand.Rand
	now   time.Time
	names []string
	live  map[string]planner.Liveness
	jobs  []uint64
	resv  []uint64
	plan  fsm.Place // the last pass's plan
}

func newCacheWorld(t *testing.T, rng *rand.Rand) *cacheWorld {
	w := &cacheWorld{replicas: &replicas{t: t, fsms: []*fsm.FSM{fsm.New()}}, rng: rng, now: at, live: map[string]planner.Liveness{}}
	for i := range 6 {
		w.join(fmt.Sprintf("m%d", i))
	}
	w.loadDatabase()
	return w
}

// join brings machine name up with random facts.
func (w *cacheWorld) join(name string) {
	f := fsm.MachineFacts{Name: name, Arch: []string{"x86_64", "sparc"}[w.rng.IntN(2)], CPUs: 1 + w.rng.IntN(4),
		MemoryMB: int64(1+w.rng.IntN(4)) * 1024, Keys: pick(w.rng, []string{"fpu", "matlab"}), Mounts: pick(w.rng, []string{"/home", "/scratch"})}
	if w.rng.IntN(3) == 0 {
		f.GPUs = []fsm.GPU{{Index: 0, Type: "a100"}}
	}
	w.apply(fsm.StubJoinType, fsm.StubJoin{At: w.now, Machine: f})
	if _, ok := w.live[name]; !ok {
		w.names = append(w.names, name)
	}
	w.live[name] = planner.Liveness{Up: true}
}

// loadDatabase declares queues of every policy and some machines with
// random keys and attributes (a machine no longer declared drains).
func (w *cacheWorld) loadDatabase() {
	db := fsm.Database{Queues: []fsm.DeclaredQueue{
		{Name: "high", Priority: 10, MaxActive: 3},
		{Name: "ded", Policy: "dedicated"},
		{Name: "spread", Policy: "spread"},
		{Name: "pre", Priority: 20, Preempt: fsm.PreemptRequeue},
	}}
	for _, n := range w.names {
		if w.rng.IntN(4) > 0 {
			db.Machines = append(db.Machines, fsm.DeclaredMachine{Name: n, Keys: pick(w.rng, []string{"big", "fpu"}),
				Attrs: map[string]float64{"speed": float64(w.rng.IntN(3))}})
		}
	}
	w.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: w.now, Database: db})
}

// pick is a random subset of from.
func pick(rng *rand.Rand, from []string) []string {
	var out []string
	for _, s := range from {
		if rng.IntN(2) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// liveness is the stubs' liveness for the machines v knows.
func (w *cacheWorld) liveness(v fsm.View) map[string]planner.Liveness {
	live := make(map[string]planner.Liveness, len(w.live))
	for _, m := range v.Machines() {
		live[m.Name] = w.live[m.Name]
	}
	return live
}

// step applies one random event and says which.
func (w *cacheWorld) step(step int) string {
	rng := w.rng
	w.now = w.now.Add(time.Duration(1+rng.IntN(120)) * time.Second)
	name := w.names[rng.IntN(len(w.names))]
	switch x := rng.IntN(100); {
	case x < 18:
		s := fsm.JobSpec{Binaries: map[string]string{[]string{"*", "x86_64", "sparc"}[rng.IntN(3)]: "/bin/x"}, Min: 1 + rng.IntN(4),
			Queue: []string{"", "", "high", "ded", "spread", "pre"}[rng.IntN(6)], MaxPerMachine: rng.IntN(3),
			MemoryMB: int64(rng.IntN(3)) * 512, CPUs: rng.IntN(3), TimeLimitSeconds: int64(rng.IntN(3)) * 600,
			Gang: rng.IntN(8) == 0}
		if keys := pick(rng, []string{"fpu", "big"}); len(keys) > 0 && rng.IntN(2) == 0 {
			s.Keys = keys[:1]
		}
		if rng.IntN(4) == 0 {
			s.GPUs = 1
		}
		if rng.IntN(5) == 0 {
			s.Requirements = []fsm.Requirement{{Attr: "speed", Op: ">=", Value: 1}}
		}
		if rng.IntN(5) == 0 {
			s.Mounts = []string{"/scratch"}
		}
		if res := w.apply(fsm.SubmitEntryType(&s), fsm.Submit{At: w.now, Owner: []string{"ann", "bob", "cy"}[rng.IntN(3)], Spec: s}); res.Err == nil {
			w.jobs = append(w.jobs, res.JobID)
		}
		return "submit"
	case x < 40:
		if len(w.plan.Assignments) == 0 {
			return "nothing to place"
		}
		p := w.plan
		p.At = w.now
		w.apply(fsm.PlaceType, p)
		return "place"
	case x < 50 && len(w.jobs) > 0:
		if j, in := pickActive(w.fsms[0], w.jobs, rng, fsm.InstancePlaced); in != nil {
			w.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: w.now, JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: in.Machine, PID: 100 + step})
		}
		return "register"
	case x < 62 && len(w.jobs) > 0:
		if j, in := pickActive(w.fsms[0], w.jobs, rng, ""); in != nil {
			w.apply(fsm.ChildTermType, fsm.ChildTerm{At: w.now, JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: in.Machine, ExitCode: rng.IntN(2)})
		}
		return "end"
	case x < 64 && len(w.jobs) > 0:
		w.apply(fsm.RestartJobType, fsm.JobControl{At: w.now, JobID: w.jobs[rng.IntN(len(w.jobs))], By: "ann"})
		return "restart"
	case x < 66 && len(w.jobs) > 0:
		w.apply(fsm.KillType, fsm.Kill{At: w.now, JobID: w.jobs[rng.IntN(len(w.jobs))], By: "ann"})
		return "kill"
	case x < 70:
		w.apply(fsm.StubLeaveType, fsm.StubLeave{At: w.now, Machine: name, Reason: "lost"})
		w.live[name] = planner.Liveness{}
		return "machine lost"
	case x < 74:
		w.join(name)
		return "machine back"
	case x < 76:
		w.join(fmt.Sprintf("m%d", len(w.names)))
		return "new machine"
	case x < 79:
		w.apply(fsm.MachineHealthType, fsm.MachineHealth{At: w.now, Machine: name, Problem: []string{"", "disk full"}[rng.IntN(2)]})
		return "health"
	case x < 82:
		w.apply(fsm.MachineAsleepType, fsm.MachineAsleep{At: w.now, Machine: name, Reason: []string{"", "console login"}[rng.IntN(2)]})
		return "asleep"
	case x < 84:
		w.loadDatabase()
		return "load database"
	case x < 87:
		from := w.now.Add(time.Duration(rng.IntN(600)) * time.Second)
		if res := w.apply(fsm.ReserveType, fsm.Reserve{At: w.now, Owner: "bob", Machines: []string{name}, From: from, Until: from.Add(10 * time.Minute)}); res.Err == nil {
			w.resv = append(w.resv, res.ReservationID)
		}
		return "reserve"
	case x < 89 && len(w.resv) > 0:
		w.apply(fsm.UnreserveType, fsm.Unreserve{At: w.now, By: "bob", IDs: []uint64{w.resv[rng.IntN(len(w.resv))]}})
		return "unreserve"
	case x < 97:
		l := w.live[name]
		l.Up = rng.IntN(5) > 0
		l.Load = float64(rng.IntN(4)) / 2
		if rng.IntN(3) == 0 {
			l.HasIdle, l.IdleMinutes = true, float64(rng.IntN(30))
		}
		w.live[name] = l
		return "liveness"
	case step > 50:
		w.replace(0, 0) // a follower catching up by InstallSnapshot
		return "restore"
	}
	return "nothing"
}
