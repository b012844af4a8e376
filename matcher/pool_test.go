package matcher

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// placeAll places n instances of req (numbered 0 ... n-1) through p, taking
// after each placement, and returns instances per machine name plus the
// last result (the first failure, if any). Each Match is checked against
// the reference matcher on the Pool's current machines.
func placeAll(t *testing.T, p *Pool, req Request, n int) (map[string]int, Result) {
	t.Helper()
	m := New()
	got := map[string]int{}
	var r Result
	for inst := range n {
		req.Instance = inst
		r = m.MatchPool(req, p)
		checkReference(t, req, poolMachines(p), r)
		if r.Machine < 0 {
			break
		}
		got[p.Machine(r.Machine).Name]++
		p.Take(r.Machine, req)
	}
	return got, r
}

// poolMachines returns the Pool's current views.
func poolMachines(p *Pool) []MachineView {
	out := make([]MachineView, p.Len())
	for i := range out {
		out[i] = p.Machine(i)
	}
	return out
}

func TestPoolBatch(t *testing.T) {
	x86 := []string{"x86_64"}
	tests := []struct {
		name     string
		machines []MachineView
		req      Request
		n        int
		want     map[string]int
		wantWhy  string // of the last Match; "" when all were placed cleanly
	}{
		{
			name: "fills every slot then stops",
			machines: []MachineView{
				with(mv("a", "x86_64"), slots(2)),
				with(mv("b", "x86_64"), slots(3)),
				with(mv("c", "x86_64"), slots(1)),
				with(mv("d", "x86_64"), slots(8), down),
			},
			req:     Request{BinaryKeys: x86},
			n:       7,
			want:    map[string]int{"a": 2, "b": 3, "c": 1},
			wantWhy: "1 machine is down or draining; 3 have no free slot",
		},
		{
			name:     "spread: 4 instances on 4 equal machines, one each",
			machines: equalMachines(4),
			req:      Request{BinaryKeys: x86},
			n:        4,
			want:     map[string]int{"node0": 1, "node1": 1, "node2": 1, "node3": 1},
		},
		{
			name:     "spread: 8 instances on 4 equal machines, two each",
			machines: equalMachines(4),
			req:      Request{BinaryKeys: x86},
			n:        8,
			want:     map[string]int{"node0": 2, "node1": 2, "node2": 2, "node3": 2},
		},
		{
			name: "spread beats a slightly lower load",
			machines: []MachineView{
				with(mv("idle", "x86_64"), slots(8)),
				with(mv("busy", "x86_64"), slots(8), load(1.5)),
			},
			req:  Request{BinaryKeys: x86},
			n:    2,
			want: map[string]int{"idle": 1, "busy": 1},
		},
		{
			name: "load balance across ratings with imposed load",
			machines: []MachineView{
				with(mv("fast", "x86_64"), slots(16), rating(4)),
				with(mv("slow", "x86_64"), slots(16), rating(1)),
			},
			req:  Request{BinaryKeys: x86},
			n:    10,
			want: map[string]int{"fast": 8, "slow": 2},
		},
		{
			name: "imposed load already there counts",
			machines: []MachineView{
				with(mv("a", "x86_64"), imposed(2)),
				mv("b", "x86_64"),
			},
			// b costs 1.5 per instance (0.5 load, 1 spread); a starts at 2.
			req:  Request{BinaryKeys: x86, Load: 0.5},
			n:    5,
			want: map[string]int{"a": 2, "b": 3},
		},
		{
			name: "max_per_machine through a batch",
			machines: []MachineView{
				with(mv("a", "x86_64"), slots(8), jobs(map[uint64]int{77: 1})),
				with(mv("b", "x86_64"), slots(8)),
				with(mv("c", "x86_64"), slots(8)),
			},
			req:     Request{JobID: 77, BinaryKeys: x86, MaxPerMachine: 2},
			n:       6,
			want:    map[string]int{"a": 1, "b": 2, "c": 2},
			wantWhy: "3 machines already run max_per_machine instances of this job",
		},
		{
			name:     "unique through a batch",
			machines: equalMachines(3),
			req:      Request{JobID: 77, BinaryKeys: x86, MaxPerMachine: 1},
			n:        4,
			want:     map[string]int{"node0": 1, "node1": 1, "node2": 1},
			wantWhy:  "3 machines already run max_per_machine instances of this job",
		},
		{
			name: "memory through a batch",
			machines: []MachineView{
				with(mv("a", "x86_64"), slots(8), memory(1024, 0)),
				with(mv("b", "x86_64"), slots(8), memory(2048, 512)),
				with(mv("c", "x86_64"), slots(8)),
			},
			req:     Request{BinaryKeys: x86, MemoryMB: 512},
			n:       6,
			want:    map[string]int{"a": 2, "b": 3},
			wantWhy: "3 machines lack 512 MB free memory",
		},
		{
			name: "reservation: the owner's batch uses the reserved machine",
			machines: []MachineView{
				with(mv("mine", "x86_64"), slots(1), reservedBy("fred")),
				with(mv("theirs", "x86_64"), slots(1), reservedBy("tclark")),
				with(mv("free", "x86_64"), slots(1)),
			},
			req:     Request{BinaryKeys: x86, Owner: "fred"},
			n:       3,
			want:    map[string]int{"mine": 1, "free": 1},
			wantWhy: "1 machine is reserved by another user; 2 have no free slot",
		},
		{
			name: "reservation: another user's batch does not",
			machines: []MachineView{
				with(mv("mine", "x86_64"), slots(1), reservedBy("fred")),
				with(mv("free", "x86_64"), slots(1)),
			},
			req:     Request{BinaryKeys: x86, Owner: "joe"},
			n:       2,
			want:    map[string]int{"free": 1},
			wantWhy: "1 machine is reserved by another user; 1 has no free slot",
		},
		{
			name: "multi-arch job spreads over both archs",
			machines: []MachineView{
				with(mv("m", "mips"), slots(2)),
				with(mv("s", "sparc"), slots(2)),
				mv("x", "x86_64"),
			},
			req:     Request{BinaryKeys: []string{"mips", "sparc"}},
			n:       5,
			want:    map[string]int{"m": 2, "s": 2},
			wantWhy: "1 machine lacks binary key mips|sparc; 2 have no free slot",
		},
		{
			name:     "unsorted keys are fine in a Pool",
			machines: []MachineView{mv("a", "x86_64", "linux", "big"), mv("b", "zz", "aa")},
			req:      Request{BinaryKeys: []string{"big"}},
			n:        2,
			want:     map[string]int{"a": 2},
			wantWhy:  "1 machine lacks binary key big",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, last := placeAll(t, NewPool(tt.machines), tt.req, tt.n)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("placements = %v, want %v", got, tt.want)
			}
			if why := last.Why(); why != tt.wantWhy {
				t.Errorf("last Why() = %q, want %q", why, tt.wantWhy)
			}
		})
	}
}

func TestPoolTake(t *testing.T) {
	caller := map[uint64]int{5: 1}
	machines := []MachineView{
		mv("a", "k"),
		with(mv("b", "k"), memory(1000, 100), imposed(0.5), jobs(caller)),
	}
	before := cloneViews(machines)
	p := NewPool(machines)
	p.Take(1, Request{JobID: 5, MemoryMB: 200, Load: 2})
	p.Take(1, Request{JobID: 6})
	p.Take(0, Request{JobID: 6, MemoryMB: 10})

	if got, want := p.Len(), 2; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	b := p.Machine(1)
	if b.Running != 2 || b.ImposedLoad != 3.5 || b.UsedMemoryMB != 300 {
		t.Errorf("Machine(1) Running, ImposedLoad, UsedMemoryMB = %d, %v, %d; want 2, 3.5, 300",
			b.Running, b.ImposedLoad, b.UsedMemoryMB)
	}
	if want := map[uint64]int{5: 2, 6: 1}; !reflect.DeepEqual(b.JobCounts, want) {
		t.Errorf("Machine(1).JobCounts = %v, want %v", b.JobCounts, want)
	}
	if want := map[uint64]int{6: 1}; !reflect.DeepEqual(p.Machine(0).JobCounts, want) {
		t.Errorf("Machine(0).JobCounts = %v, want %v", p.Machine(0).JobCounts, want)
	}
	// The caller's views, and their maps, are untouched.
	if !reflect.DeepEqual(machines, before) {
		t.Errorf("caller's machines = %+v, want %+v", machines, before)
	}
	if want := map[uint64]int{5: 1}; !reflect.DeepEqual(caller, want) {
		t.Errorf("caller's JobCounts = %v, want %v", caller, want)
	}
	if machines[0].JobCounts != nil {
		t.Errorf("caller's nil JobCounts became %v", machines[0].JobCounts)
	}
	// The next match sees the placements: job 5 now has 2 on b.
	r := New().MatchPool(Request{JobID: 5, BinaryKeys: []string{"k"}, MaxPerMachine: 2}, p)
	if r.Machine != 0 || r.Why() != "1 machine already runs max_per_machine instances of this job" {
		t.Errorf("after Take, machine %d, Why %q; want 0 and the per-machine reason", r.Machine, r.Why())
	}
}

func TestPoolMatchAllocs(t *testing.T) {
	ms := make([]MachineView, 100)
	for i := range ms {
		ms[i] = with(mv(fmt.Sprintf("n%d", i), "linux", "x86_64"), mounts("/d"),
			attrs(map[string]float64{"mem": 64}), memory(1000, 0), jobs(map[uint64]int{1: i % 2}))
	}
	p := NewPool(ms)
	m := New()
	req := Request{JobID: 1, BinaryKeys: []string{"x86_64"}, Keys: []string{"linux"},
		Requirements: []Requirement{{"mem", ">", 10}}, Mounts: []string{"/d"},
		MaxPerMachine: 4, MemoryMB: 10}
	m.MatchPool(req, p) // warm the scratch space
	if n := testing.AllocsPerRun(100, func() { m.MatchPool(req, p) }); n != 0 {
		t.Errorf("MatchPool allocations = %v, want 0 when nothing is rejected", n)
	}
}

// TestPoolAgainstReference places batches of random requests on random
// pools (from a fixed seed) and checks every Match against the reference
// matcher, so the index, the counts and the scorers agree with a plain scan.
func TestPoolAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(from []string, max int) []string {
		var out []string
		for range rng.IntN(max + 1) {
			if k := from[rng.IntN(len(from))]; !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out
	}
	keys := []string{"x86_64", "sparc", "mips", "fpu", "mathlab", "gpu"}
	mnts := []string{"/a", "/b", "/c"}
	users := []string{"", "", "fred", "joe"}
	for round := range 200 {
		n := 1 + rng.IntN(200)
		ms := make([]MachineView, n)
		for i := range ms {
			ms[i] = MachineView{
				Name:       fmt.Sprintf("m%d", rng.IntN(n+5)), // some duplicates
				Keys:       pick(keys, 4),
				Mounts:     pick(mnts, 2),
				Up:         rng.IntN(10) > 0,
				Awake:      rng.IntN(10) > 0,
				ReservedBy: users[rng.IntN(len(users))],
				Slots:      rng.IntN(5),
				Running:    rng.IntN(3),
				Load:       float64(rng.IntN(8)) / 2,
				Rating:     float64(rng.IntN(4)),
				MemoryMB:   int64(rng.IntN(4)) * 256,
				Attrs:      map[string]float64{"mem": float64(rng.IntN(64))},
			}
			if !ms[i].Awake {
				ms[i].AsleepReason = []string{"", "console login", "load 3 > 2"}[i%3] // from i: the rng's stream stays as it was
			}
			if rng.IntN(3) == 0 {
				ms[i].JobCounts = map[uint64]int{uint64(rng.IntN(3)): rng.IntN(3)}
			}
		}
		p := NewPool(ms)
		for job := range uint64(3) {
			req := Request{
				JobID:         job,
				Owner:         users[rng.IntN(len(users))],
				BinaryKeys:    pick(append(keys, "*"), 2),
				Keys:          pick(keys, 2),
				Mounts:        pick(mnts, 1),
				MaxPerMachine: rng.IntN(3),
				MemoryMB:      int64(rng.IntN(3)) * 128,
				Load:          float64(rng.IntN(3)) / 2,
			}
			if rng.IntN(2) == 0 {
				req.Requirements = []Requirement{{"mem", []string{">", "<=", "=="}[rng.IntN(3)], 32}}
			}
			if rng.IntN(4) == 0 {
				req.Machines = []string{ms[rng.IntN(n)].Name, "nosuch"}
			}
			if t.Failed() {
				return
			}
			t.Run(fmt.Sprintf("round %d job %d", round, job), func(t *testing.T) {
				placeAll(t, p, req, 1+rng.IntN(20))
			})
		}
	}
}

func TestPoolDeterministic(t *testing.T) {
	ms := classMachines(500)
	for i := range ms {
		ms[i].JobCounts = map[uint64]int{1: i % 3, 2: i % 2, 3: 1, 4: i % 5}
	}
	run := func() []Result {
		p, m := NewPool(ms), New()
		var out []Result
		for j := range uint64(6) {
			req := Request{JobID: j, BinaryKeys: []string{"x86_64", "mips"}, Keys: []string{"fpu"},
				MaxPerMachine: 2, MemoryMB: 4096}
			for inst := range 300 {
				req.Instance = inst
				r := m.MatchPool(req, p)
				out = append(out, r)
				if r.Machine >= 0 {
					p.Take(r.Machine, req)
				}
			}
		}
		return out
	}
	want := run()
	for range 5 {
		if got := run(); !reflect.DeepEqual(got, want) {
			t.Fatalf("a second run placed differently")
		}
	}
}

func TestPoolRelease(t *testing.T) {
	machines := []MachineView{
		with(mv("a", "k"), slots(1)),
		with(mv("b", "k"), memory(1000, 100), imposed(0.5), jobs(map[uint64]int{5: 1})),
	}
	p := NewPool(machines)
	req := Request{JobID: 7, BinaryKeys: []string{"k"}, MemoryMB: 200, Load: 2}
	p.Take(0, req)
	p.Take(1, req)
	p.Release(0, req)
	p.Release(1, req)
	for i := range machines {
		got := p.Machine(i)
		if got.Running != machines[i].Running || got.ImposedLoad != machines[i].ImposedLoad || got.UsedMemoryMB != machines[i].UsedMemoryMB {
			t.Errorf("Machine(%d) after Take and Release: Running %d ImposedLoad %v UsedMemoryMB %d, want %d %v %d", i,
				got.Running, got.ImposedLoad, got.UsedMemoryMB, machines[i].Running, machines[i].ImposedLoad, machines[i].UsedMemoryMB)
		}
		if got.JobCounts[7] != 0 {
			t.Errorf("Machine(%d).JobCounts = %v, want no job 7", i, got.JobCounts)
		}
	}
	// The one-slot machine a is free again: the next match may take it.
	if r := New().MatchPool(Request{JobID: 8, BinaryKeys: []string{"k"}, Machines: []string{"a"}}, p); r.Machine != 0 {
		t.Errorf("after Release, a match for a got machine %d (%s), want 0", r.Machine, r.Why())
	}
}
