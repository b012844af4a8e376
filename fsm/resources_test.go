package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// submitSpec submits s as the entry type it needs and returns the job id.
func (a *applier) submitSpec(owner string, s fsm.JobSpec) uint64 {
	a.tb.Helper()
	return a.mustOK(fsm.SubmitEntryType(&s), fsm.Submit{At: at(1), Owner: owner, Spec: s}).JobID
}

func TestResourceJobIsItsOwnEntryType(t *testing.T) {
	for _, s := range []fsm.JobSpec{
		{CPUs: 2}, {GPUs: 1}, {Gres: map[string]int{"fpga": 1}}, {DiskMB: 1}, {Licenses: map[string]int{"matlab": 1}},
	} {
		if got := fsm.SubmitEntryType(&s); got != fsm.SubmitResourcesType {
			t.Errorf("%+v: entry type %v, want SubmitResources", s, got)
		}
	}
	one := fsm.JobSpec{CPUs: 1}
	if got := fsm.SubmitEntryType(&one); got != fsm.SubmitType {
		t.Errorf("cpus=1 is today's slot: entry type %v, want Submit", got)
	}
	if fsm.CommandLevel < fsm.SubmitResourcesType {
		t.Errorf("CommandLevel %v, want at least SubmitResources (40)", fsm.CommandLevel)
	}
}

func TestPlaceGivesDistinctGPUs(t *testing.T) {
	a := newApplier(t)
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts("g")})
	s := spec("train", 4)
	s.GPUs = 1
	job := a.submitSpec("alice", s)
	res := a.place(asg(job, 0, "g"), asg(job, 1, "g"), asg(job, 2, "g"), asg(job, 3, "g"))
	if len(res.Accepted) != 3 || res.Dropped != 1 {
		t.Fatalf("accepted %d dropped %d, want 3 and 1 (three GPUs)", len(res.Accepted), res.Dropped)
	}
	for i, want := range [][]int{{0}, {1}, {2}, nil} {
		if got := a.instance(job, i).GPUs; !slices.Equal(got, want) {
			t.Errorf("instance %d has GPUs %v, want %v", i, got, want)
		}
	}
	a.register(job, 1, "g", 101)
	a.term(job, 1, "g", 0)
	if res := a.place(asg(job, 3, "g")); len(res.Accepted) != 1 {
		t.Fatalf("after GPU 1 was freed: dropped")
	}
	if got := a.instance(job, 3).GPUs; !slices.Equal(got, []int{1}) {
		t.Errorf("instance 3 got %v, want the freed GPU [1]", got)
	}

	typed := spec("t4only", 2)
	typed.GPUs, typed.GPUType = 1, "t4"
	a2 := newApplier(t)
	a2.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts("g")})
	job = a2.submitSpec("alice", typed)
	if res := a2.place(asg(job, 0, "g"), asg(job, 1, "g")); len(res.Accepted) != 1 {
		t.Fatalf("two t4 instances on one t4: accepted %d, want 1", len(res.Accepted))
	}
	if got := a2.instance(job, 0).GPUs; !slices.Equal(got, []int{2}) {
		t.Errorf("t4 instance got %v, want [2]", got)
	}
}

func TestPlaceCountsCPUsGresDisk(t *testing.T) {
	a := newApplier(t)
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts("g")}) // 8 CPUs, 2 fpga, 50000 MB disk
	for _, c := range []struct {
		name     string
		set      func(*fsm.JobSpec)
		accepted int
	}{
		{"cpus", func(s *fsm.JobSpec) { s.CPUs = 3 }, 2},
		{"gres", func(s *fsm.JobSpec) { s.Gres = map[string]int{"fpga": 1} }, 2},
		{"disk", func(s *fsm.JobSpec) { s.DiskMB = 20000 }, 2},
		{"unknown gres", func(s *fsm.JobSpec) { s.Gres = map[string]int{"ssd": 1} }, 0},
	} {
		s := spec(c.name, 4)
		c.set(&s)
		job := a.submitSpec("alice", s)
		res := a.place(asg(job, 0, "g"), asg(job, 1, "g"), asg(job, 2, "g"), asg(job, 3, "g"))
		if len(res.Accepted) != c.accepted {
			t.Errorf("%s: accepted %d, want %d", c.name, len(res.Accepted), c.accepted)
		}
		a.mustOK(fsm.KillType, fsm.Kill{At: at(5), JobID: job, By: "alice"})
		for i := range 4 {
			a.apply(fsm.ChildTermType, fsm.ChildTerm{At: at(6), JobID: job, Instance: i, Attempt: 1, Machine: "g", ExitCode: -1, Signal: "TERM"})
		}
	}
	var cpus int
	a.f.Read(func(v fsm.View) { cpus, _, _, _ = v.MachineUsage("g") })
	if cpus != 0 {
		t.Errorf("after every job ended, %d CPUs still held", cpus)
	}
}

func TestLicencesAcrossMachines(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.join("m2", "x86_64", 4)
	a.load(fsm.Database{Licenses: []fsm.DeclaredLicense{{Name: "matlab", Count: 1}}})
	s := spec("sim", 1)
	s.Licenses = map[string]int{"matlab": 1}
	j1 := a.submitSpec("alice", s)
	j2 := a.submitSpec("bob", s)
	res := a.place(asg(j1, 0, "m1"), asg(j2, 0, "m2"))
	if len(res.Accepted) != 1 || res.Accepted[0].JobID != j1 {
		t.Fatalf("accepted %+v, want only job %d (one licence)", res.Accepted, j1)
	}
	var uses []fsm.LicenseUse
	a.f.Read(func(v fsm.View) { uses = v.Licenses() })
	if !slices.Equal(uses, []fsm.LicenseUse{{Name: "matlab", Count: 1, Used: 1}}) {
		t.Errorf("Licenses = %+v", uses)
	}
	a.register(j1, 0, "m1", 100)
	a.term(j1, 0, "m1", 0)
	if res := a.place(asg(j2, 0, "m2")); len(res.Accepted) != 1 {
		t.Fatal("the licence was not given back at the end")
	}
	undeclared := spec("nolic", 1)
	undeclared.Licenses = map[string]int{"sas": 1}
	j3 := a.submitSpec("carol", undeclared)
	if res := a.place(asg(j3, 0, "m1")); len(res.Accepted) != 0 {
		t.Error("an undeclared licence was granted")
	}
}

func TestGangNeedsResourcesOnEveryMember(t *testing.T) {
	a := newApplier(t)
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts("g1")})
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts("g2")})
	a.load(fsm.Database{Licenses: []fsm.DeclaredLicense{{Name: "matlab", Count: 3}}})
	s := spec("mpi", 4)
	s.Gang, s.GPUs, s.GPUType, s.Licenses = true, 1, "a100", map[string]int{"matlab": 1}
	job := a.submitSpec("alice", s)
	// Three a100 instances on g1 do not fit (it has two): none is placed.
	if res := a.place(asg(job, 0, "g1"), asg(job, 1, "g1"), asg(job, 2, "g1"), asg(job, 3, "g2")); len(res.Accepted) != 0 {
		t.Fatalf("a gang with three a100 on a two-a100 machine: accepted %d, want none", len(res.Accepted))
	}
	// Two on each fit the GPUs, but four licences of three do not.
	if res := a.place(asg(job, 0, "g1"), asg(job, 1, "g1"), asg(job, 2, "g2"), asg(job, 3, "g2")); len(res.Accepted) != 0 {
		t.Fatalf("a gang needing four licences of three: accepted %d, want none", len(res.Accepted))
	}
	a.load(fsm.Database{Licenses: []fsm.DeclaredLicense{{Name: "matlab", Count: 4}}})
	if res := a.place(asg(job, 0, "g1"), asg(job, 1, "g1"), asg(job, 2, "g2"), asg(job, 3, "g2")); len(res.Accepted) != 4 {
		t.Fatalf("accepted %d, want all 4", len(res.Accepted))
	}
	for i, want := range [][]int{{0}, {1}, {0}, {1}} {
		if got := a.instance(job, i).GPUs; !slices.Equal(got, want) {
			t.Errorf("instance %d has GPUs %v, want %v", i, got, want)
		}
	}
}

func TestReservedGPUMachineOnlyForItsUser(t *testing.T) {
	a := newApplier(t)
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts("g")})
	a.mustOK(fsm.ReserveType, fsm.Reserve{At: at(0), Owner: "alice", Machines: []string{"g"}, From: at(0)})
	s := spec("train", 1)
	s.GPUs = 1
	bob := a.submitSpec("bob", s)
	alice := a.submitSpec("alice", s)
	if res := a.place(asg(bob, 0, "g"), asg(alice, 0, "g")); len(res.Accepted) != 1 || res.Accepted[0].JobID != alice {
		t.Fatalf("accepted %+v, want alice's only", res.Accepted)
	}
}

// TestRandomResourceInvariants applies random joins, submits, placements,
// ends and kills, with a snapshot and restore part-way, and checks after
// every entry that no two active instances share a GPU and no machine
// holds more CPUs, memory, GPUs, gres or disk than it has, nor the pool
// more licences than declared; and that the restored FSM, given the same
// entries, ends in the same state.
func TestRandomResourceInvariants(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 39))
			a := newApplier(t)
			var b *applier // the restored copy, once made
			placed := 0
			apply := func(typ fsm.MessageType, body any) {
				data := encode(t, command{typ, body})
				placed += len(a.raw(data).Accepted)
				if b != nil {
					b.raw(data)
				}
			}
			machines := []string{"g1", "g2", "g3"}
			for _, m := range machines {
				apply(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: gpuFacts(m)})
			}
			apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(0), Database: fsm.Database{Licenses: []fsm.DeclaredLicense{{Name: "matlab", Count: 3}}}})
			var jobs []uint64
			for step := range 400 {
				if step == 200 {
					b = newApplier(t)
					if err := restoreInto(b.f, snapshotBytes(t, a.f)); err != nil {
						t.Fatalf("restore: %v", err)
					}
					b.next = a.next
				}
				switch r := rng.IntN(10); {
				case r < 2:
					s := spec("j", 1+rng.IntN(3))
					s.CPUs, s.GPUs, s.MemoryMB, s.DiskMB = rng.IntN(4), rng.IntN(3), int64(rng.IntN(3))*1024, int64(rng.IntN(3))*10000
					if rng.IntN(2) == 0 && s.GPUs > 0 {
						s.GPUType = []string{"a100", "t4"}[rng.IntN(2)]
					}
					if rng.IntN(3) == 0 {
						s.Gres = map[string]int{"fpga": 1}
					}
					if rng.IntN(3) == 0 {
						s.Licenses = map[string]int{"matlab": 1 + rng.IntN(2)}
					}
					s.Gang = rng.IntN(4) == 0
					data := encode(t, command{fsm.SubmitEntryType(&s), fsm.Submit{At: at(step), Owner: "u", Spec: s}})
					res := a.raw(data)
					if b != nil {
						b.raw(data)
					}
					if res.Err == nil {
						jobs = append(jobs, res.JobID)
					}
				case r < 6 && len(jobs) > 0:
					job := a.job(jobs[rng.IntN(len(jobs))])
					var as []fsm.Assignment
					for i := range job.Instances {
						as = append(as, fsm.Assignment{JobID: job.ID, Instance: i, Attempt: job.Instances[i].Attempt,
							Machine: machines[rng.IntN(len(machines))], Key: fsm.AnyKey})
					}
					apply(fsm.PlaceType, fsm.Place{At: at(step), Assignments: as})
				case len(jobs) > 0:
					job := a.job(jobs[rng.IntN(len(jobs))])
					i := rng.IntN(len(job.Instances))
					if in := job.Instances[i]; in.Active() {
						apply(fsm.ChildTermType, fsm.ChildTerm{At: at(step), JobID: job.ID, Instance: i, Attempt: in.Attempt, Machine: in.Machine, ExitCode: rng.IntN(2)})
					}
				}
				checkResourceInvariants(t, a)
			}
			if b == nil || placed < 20 {
				t.Fatalf("restored %v, placed %d: the test exercised too little", b != nil, placed)
			}
			t.Logf("placed %d instances", placed)
			if got, want := stateBytes(t, b.f), stateBytes(t, a.f); string(got) != string(want) {
				t.Fatalf("restored FSM diverged:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// checkResourceInvariants fails t if any machine or licence is
// overcommitted or two active instances share a GPU.
func checkResourceInvariants(t *testing.T, a *applier) {
	t.Helper()
	a.f.Read(func(v fsm.View) {
		type use struct {
			cpus      int
			mem, disk int64
			gres      map[string]int
			gpus      map[int]fsm.InstanceRef
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
					u = &use{gres: map[string]int{}, gpus: map[int]fsm.InstanceRef{}}
					uses[in.Machine] = u
				}
				u.cpus += j.Spec.CPUsPerInstance()
				u.mem += j.Spec.MemoryMB
				u.disk += j.Spec.DiskMB
				for n, c := range j.Spec.Gres {
					u.gres[n] += c
				}
				for n, c := range j.Spec.Licenses {
					lic[n] += c
				}
				if len(in.GPUs) != j.Spec.GPUs {
					t.Fatalf("job %d instance %d holds GPUs %v, asked for %d", j.ID, in.Index, in.GPUs, j.Spec.GPUs)
				}
				for _, g := range in.GPUs {
					if other, dup := u.gpus[g]; dup {
						t.Fatalf("GPU %d of %s held by %v and job %d instance %d", g, in.Machine, other, j.ID, in.Index)
					}
					u.gpus[g] = fsm.InstanceRef{JobID: j.ID, Instance: in.Index}
				}
			}
		}
		for name, u := range uses {
			m, _ := v.Machine(name)
			e := m.Effective()
			if u.cpus > m.Slots() || u.mem > e.MemoryMB || u.disk > e.DiskMB || len(u.gpus) > len(e.GPUs) || u.gres["fpga"] > e.Gres["fpga"] {
				t.Fatalf("machine %s overcommitted: %+v of slots %d mem %d disk %d gpus %d gres %v", name, u, m.Slots(), e.MemoryMB, e.DiskMB, len(e.GPUs), e.Gres)
			}
			if cpus, gpus, disk, _ := v.MachineUsage(name); cpus != u.cpus || fsm.GPUsInUse(gpus) != len(u.gpus) || disk != u.disk {
				t.Fatalf("machine %s: index says cpus %d gpus %d disk %d, instances %d %d %d", name, cpus, fsm.GPUsInUse(gpus), disk, u.cpus, len(u.gpus), u.disk)
			}
		}
		for _, l := range v.Licenses() {
			if lic[l.Name] > l.Count || lic[l.Name] != l.Used {
				t.Fatalf("licence %s: %d held, index %d, count %d", l.Name, lic[l.Name], l.Used, l.Count)
			}
		}
	})
}
