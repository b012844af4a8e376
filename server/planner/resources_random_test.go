package planner_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// replicas are the FSMs of a server group, each applying the same
// entries at the same indexes, as Raft has them do.
type replicas struct {
	t     *testing.T
	fsms  []*fsm.FSM
	index uint64
}

// apply applies one entry to every replica and returns the first's
// result; a rule violation (Err) is a result like any other here.
func (r *replicas) apply(typ fsm.MessageType, body any) *fsm.Result {
	r.t.Helper()
	data, err := fsm.Encode(typ, body)
	if err != nil {
		r.t.Fatal(err)
	}
	r.index++
	var first *fsm.Result
	for _, f := range r.fsms {
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: r.index, Data: data}).(*fsm.Result)
		if first == nil {
			first = res
		}
	}
	return first
}

// snapshot is replica i's persisted snapshot.
func (r *replicas) snapshot(i int) []byte {
	r.t.Helper()
	snap, err := r.fsms[i].Snapshot()
	if err != nil {
		r.t.Fatal(err)
	}
	defer snap.Release()
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		r.t.Fatal(err)
	}
	return sink.Bytes()
}

// bufSink is a raft.SnapshotSink in memory.
type bufSink struct{ bytes.Buffer }

func (s *bufSink) ID() string    { return "mem" }
func (s *bufSink) Cancel() error { return nil }
func (s *bufSink) Close() error  { return nil }

// replace makes replica i a new server that catches up from replica
// from's snapshot (Raft's InstallSnapshot) and applies on from there.
func (r *replicas) replace(i, from int) {
	r.t.Helper()
	f := fsm.New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(r.snapshot(from)))); err != nil {
		r.t.Fatalf("restore: %v", err)
	}
	r.fsms[i] = f
}

// TestRandomResourceInterleavings drives a three-replica group with
// seeded random interleavings of submits asking for CPUs, memory, GPUs
// (typed or not), gres and licences, gangs among them; placements chosen
// by the planner on the current leader's replica, and Places no planner
// made (random machines: only Apply's checks keep them); registrations, attempt
// ends, kills and restarts (netmgr restart); machine loss and return;
// leader changes, after which the deposed leader's last plan, computed
// before the change, still commits (as a Place proposed by an old leader
// does); and a replica replaced by one restored from a snapshot. After
// every entry: no GPU of a machine is held by two active instances, none
// holds a GPU its machine lacks, no machine holds more CPUs, memory,
// GPUs or gres than it has, no licence more than its count, the usage
// indexes agree with the instances, and every replica's state is
// byte-equal.
func TestRandomResourceInterleavings(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x39))
			r := &replicas{t: t, fsms: []*fsm.FSM{fsm.New(), fsm.New(), fsm.New()}}
			machines := map[string]fsm.MachineFacts{
				"g1": {Name: "g1", Arch: "x86_64", CPUs: 4, MemoryMB: 8192, GPUs: []fsm.GPU{{Index: 0, Type: "a100"}, {Index: 1, Type: "a100"}}},
				"g2": {Name: "g2", Arch: "x86_64", CPUs: 8, MemoryMB: 16384, GPUs: []fsm.GPU{{Index: 0, Type: "a100"}, {Index: 1, Type: "t4"}, {Index: 2, Type: "t4"}},
					Attrs: map[string]float64{"gres.fpga": 2}},
				"c1": {Name: "c1", Arch: "x86_64", CPUs: 2, MemoryMB: 4096, Attrs: map[string]float64{"gres.fpga": 1}},
			}
			names := []string{"c1", "g1", "g2"}
			up := map[string]bool{}
			for _, m := range names {
				r.apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: machines[m]})
				up[m] = true
			}
			r.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, Database: fsm.Database{
				Licenses: []fsm.DeclaredLicense{{Name: "matlab", Count: 2}, {Name: "ansys", Count: 1}}}})
			leader, term := 0, uint64(1)
			// pending is the leader's plan proposed but not yet committed;
			// stale, a deposed leader's pending plan, which still commits
			// after the new leader's own.
			var pending, stale *fsm.Place
			var jobs []uint64
			counts := map[string]int{}
			for step := range 500 {
				now := at.Add(time.Duration(step) * time.Second)
				var kind string
				switch x := rng.IntN(100); {
				case x < 16:
					kind = "submit"
					s := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1 + rng.IntN(3)}
					s.CPUs, s.MemoryMB = rng.IntN(4), int64(rng.IntN(4))*1024
					if s.GPUs = rng.IntN(3); s.GPUs > 0 && rng.IntN(2) == 0 {
						s.GPUType = []string{"a100", "t4"}[rng.IntN(2)]
					}
					if rng.IntN(4) == 0 {
						s.Gres = map[string]int{"fpga": 1}
					}
					if rng.IntN(3) == 0 {
						s.Licenses = map[string]int{[]string{"matlab", "ansys"}[rng.IntN(2)]: 1}
					}
					s.Gang = rng.IntN(5) == 0
					if res := r.apply(fsm.SubmitEntryType(&s), fsm.Submit{At: now, Owner: "u", Spec: s}); res.Err == nil {
						jobs = append(jobs, res.JobID)
					}
				case x < 38:
					kind = "place"
					if pending != nil {
						counts["placed"] += len(r.apply(fsm.PlaceType, *pending).Accepted)
						pending = nil
					}
					var plan fsm.Place
					r.fsms[leader].Read(func(v fsm.View) {
						live := map[string]planner.Liveness{}
						for _, m := range names {
							live[m] = planner.Liveness{Up: up[m]}
						}
						plan = planner.New(v, live, now).Place()
					})
					plan.At = now
					switch {
					case len(plan.Assignments) == 0:
					case rng.IntN(3) == 0:
						pending = &plan // in flight: commits at the next place, or goes stale
					default:
						counts["placed"] += len(r.apply(fsm.PlaceType, plan).Accepted)
					}
				case x < 44 && len(jobs) > 0:
					// A Place no planner made (a buggy or racing leader's):
					// queued instances of a job sent to random machines.
					// Apply alone must keep the counts.
					kind = "unplanned place"
					var p fsm.Place
					r.fsms[0].Read(func(v fsm.View) {
						j, _ := v.Job(jobs[rng.IntN(len(jobs))])
						for _, in := range j.Instances {
							if in.State == fsm.InstanceQueued {
								p.Assignments = append(p.Assignments, fsm.Assignment{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt,
									Machine: names[rng.IntN(len(names))], Key: fsm.AnyKey})
							}
						}
						p.PlannedAtIndex = v.Index()
					})
					p.At = now
					if len(p.Assignments) > 0 {
						res := r.apply(fsm.PlaceType, p)
						counts["unplanned accepted"] += len(res.Accepted)
						counts["unplanned dropped"] += res.Dropped
					}
				case x < 56 && len(jobs) > 0:
					kind = "register"
					j, in := pickActive(r.fsms[0], jobs, rng, fsm.InstancePlaced)
					if in != nil {
						r.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: now, JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: in.Machine, PID: 100 + step})
					}
				case x < 72 && len(jobs) > 0:
					kind = "end"
					j, in := pickActive(r.fsms[0], jobs, rng, "")
					if in != nil {
						r.apply(fsm.ChildTermType, fsm.ChildTerm{At: now, JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Machine: in.Machine, ExitCode: rng.IntN(2)})
					}
				case x < 76 && len(jobs) > 0:
					kind = "restart"
					r.apply(fsm.RestartJobType, fsm.JobControl{At: now, JobID: jobs[rng.IntN(len(jobs))], By: "u"})
				case x < 78 && len(jobs) > 0:
					kind = "kill"
					r.apply(fsm.KillType, fsm.Kill{At: now, JobID: jobs[rng.IntN(len(jobs))], By: "u"})
				case x < 84:
					m := names[rng.IntN(len(names))]
					if up[m] {
						kind = "machine lost"
						r.apply(fsm.StubLeaveType, fsm.StubLeave{At: now, Machine: m, Reason: "lost"})
					} else {
						kind = "machine back"
						r.apply(fsm.StubJoinType, fsm.StubJoin{At: now, Machine: machines[m]})
					}
					up[m] = !up[m]
				case x < 90:
					kind = "leader change"
					if pending != nil {
						stale, pending = pending, nil
					}
					leader, term = (leader+1+rng.IntN(2))%3, term+1
					r.apply(fsm.LeaderElectedType, fsm.LeaderElected{At: now, Name: fmt.Sprint("s", leader), Term: term})
				case x < 96 && stale != nil:
					kind = "stale place"
					res := r.apply(fsm.PlaceType, *stale)
					counts["stale accepted"] += len(res.Accepted)
					counts["stale dropped"] += res.Dropped
					stale = nil
				case step > 100:
					kind = "replica replaced"
					i := rng.IntN(3)
					r.replace(i, (i+1)%3)
				default:
					continue
				}
				counts[kind]++
				checkInterleaving(t, r, step, kind)
			}
			t.Logf("seed %d: %v", seed, counts)
			for _, k := range []string{"placed", "unplanned dropped", "leader change", "stale place", "machine lost", "restart", "replica replaced"} {
				if counts[k] == 0 {
					t.Errorf("the run had no %s: it exercised too little (%v)", k, counts)
				}
			}
		})
	}
}

// pickActive returns a random active instance of jobs in state (any
// active state when ""), or nil.
func pickActive(f *fsm.FSM, jobs []uint64, rng *rand.Rand, state string) (*fsm.Job, *fsm.Instance) {
	type pick struct {
		j  *fsm.Job
		in *fsm.Instance
	}
	var all []pick
	f.Read(func(v fsm.View) {
		for _, id := range jobs {
			j, ok := v.Job(id)
			if !ok {
				continue
			}
			for i := range j.Instances {
				in := &j.Instances[i]
				if in.Active() && (state == "" || in.State == state) {
					all = append(all, pick{j, in})
				}
			}
		}
	})
	if len(all) == 0 {
		return nil, nil
	}
	p := all[rng.IntN(len(all))]
	return p.j, p.in
}

// checkInterleaving fails t, naming the step, if any machine or licence
// is overcommitted, a GPU is held twice or is not its machine's, the
// usage indexes disagree with the instances, a replica's free-slot index
// disagrees with its counts, or the replicas differ.
func checkInterleaving(t *testing.T, r *replicas, step int, kind string) {
	t.Helper()
	where := fmt.Sprintf("step %d (%s)", step, kind)
	r.fsms[0].Read(func(v fsm.View) {
		type use struct {
			cpus, gres int
			mem        int64
			gpus       map[int]string
		}
		uses := map[string]*use{}
		lic := map[string]int{}
		for _, j := range v.Jobs() {
			for _, in := range j.Instances {
				if !in.Active() {
					continue
				}
				u := uses[in.Machine]
				if u == nil {
					u = &use{gpus: map[int]string{}}
					uses[in.Machine] = u
				}
				u.cpus += j.Spec.CPUsPerInstance()
				u.mem += j.Spec.MemoryMB
				u.gres += j.Spec.Gres["fpga"]
				for n, c := range j.Spec.Licenses {
					lic[n] += c
				}
				if len(in.GPUs) != j.Spec.GPUs {
					t.Fatalf("%s: job %d instance %d holds GPUs %v, asked for %d", where, j.ID, in.Index, in.GPUs, j.Spec.GPUs)
				}
				m, _ := v.Machine(in.Machine)
				for _, g := range in.GPUs {
					if other, dup := u.gpus[g]; dup {
						t.Fatalf("%s: GPU %d of %s held by %s and by job %d instance %d", where, g, in.Machine, other, j.ID, in.Index)
					}
					if m == nil || !slices.ContainsFunc(m.Effective().GPUs, func(x fsm.GPU) bool {
						return x.Index == g && (j.Spec.GPUType == "" || x.Type == j.Spec.GPUType)
					}) {
						t.Fatalf("%s: job %d instance %d holds GPU %d, which %s does not have (of type %q)", where, j.ID, in.Index, g, in.Machine, j.Spec.GPUType)
					}
					u.gpus[g] = fmt.Sprintf("job %d instance %d", j.ID, in.Index)
				}
			}
		}
		for name, u := range uses {
			m, ok := v.Machine(name)
			if !ok {
				t.Fatalf("%s: active instances on unknown machine %s", where, name)
			}
			e := m.Effective()
			if u.cpus > m.Slots() || u.mem > e.MemoryMB || len(u.gpus) > len(e.GPUs) || u.gres > e.Gres["fpga"] {
				t.Fatalf("%s: machine %s overcommitted: cpus %d/%d mem %d/%d gpus %d/%d fpga %d/%d", where, name,
					u.cpus, m.Slots(), u.mem, e.MemoryMB, len(u.gpus), len(e.GPUs), u.gres, e.Gres["fpga"])
			}
			if cpus, gpus, _, gres := v.MachineUsage(name); cpus != u.cpus || fsm.GPUsInUse(gpus) != len(u.gpus) || gres["fpga"] != u.gres {
				t.Fatalf("%s: machine %s: index says cpus %d gpus %d fpga %d, instances %d %d %d", where, name, cpus, fsm.GPUsInUse(gpus), gres["fpga"], u.cpus, len(u.gpus), u.gres)
			}
		}
		for _, l := range v.Licenses() {
			if lic[l.Name] > l.Count || lic[l.Name] != l.Used {
				t.Fatalf("%s: licence %s: %d held, index %d, count %d", where, l.Name, lic[l.Name], l.Used, l.Count)
			}
		}
	})
	for i, f := range r.fsms {
		f.Read(func(v fsm.View) {
			var want, got []string
			for _, m := range v.Machines() {
				if v.Running(m.Name) < m.Slots() {
					want = append(want, m.Name)
				}
			}
			for m := range v.MachinesWithFreeSlot() {
				got = append(got, m.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: replica %d's index of machines with a free slot is %v, the counts say %v", where, i, got, want)
			}
		})
	}
	want := r.snapshot(0)
	for i := 1; i < len(r.fsms); i++ {
		if got := r.snapshot(i); !bytes.Equal(got, want) {
			t.Fatalf("%s: replica %d's state differs from replica 0's:\n%s\nwant:\n%s", where, i, got, want)
		}
	}
}
