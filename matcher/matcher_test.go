package matcher

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestMatchFilters(t *testing.T) {
	x86 := []string{"x86_64"}
	tests := []struct {
		name     string
		req      Request
		machines []MachineView
		want     string // machine name, "" for none
		wantWhy  string
	}{
		{
			name:     "binary: one machine lacks both keys",
			req:      Request{BinaryKeys: []string{"sparc", "mips"}},
			machines: []MachineView{mv("a", "x86_64"), mv("b", "mips")},
			want:     "b", wantWhy: "1 machine lacks binary key sparc|mips",
		},
		{
			name:     "binary: key known to no machine",
			req:      Request{BinaryKeys: []string{"vax"}},
			machines: []MachineView{mv("a", "x86_64"), mv("b", "sparc")},
			wantWhy:  "2 machines lack binary key vax",
		},
		{
			name:     "binary: job names none",
			machines: []MachineView{mv("a", "x86_64")},
			wantWhy:  "1 machine lacks binary key (the job names none)",
		},
		{
			name:     "binary: wildcard matches every machine",
			req:      Request{BinaryKeys: []string{"*"}},
			machines: []MachineView{with(mv("a", "x86_64"), load(2)), mv("b", "sparc")},
			want:     "b",
		},
		{
			name: "keys: every machine lacks the same key",
			req:  Request{BinaryKeys: x86, Keys: []string{"mathlab"}},
			machines: []MachineView{
				mv("a", "x86_64"), mv("b", "x86_64", "fpu"), mv("c", "x86_64", "mathlab"),
			},
			want: "c", wantWhy: "2 machines lack key mathlab",
		},
		{
			name: "keys: counted against the first missing key in request order",
			req:  Request{BinaryKeys: x86, Keys: []string{"mathlab", "fpu"}},
			machines: []MachineView{
				mv("a", "x86_64"), mv("b", "x86_64", "fpu"), mv("c", "x86_64", "mathlab"),
				mv("d", "x86_64", "mathlab"),
			},
			wantWhy: "2 machines lack key mathlab; 2 lack key fpu",
		},
		{
			name:     "keys: one machine, unknown key",
			req:      Request{BinaryKeys: x86, Keys: []string{"nosuch"}},
			machines: []MachineView{mv("a", "x86_64")},
			wantWhy:  "1 machine lacks key nosuch",
		},
		{
			name:     "keys: binary counted first",
			req:      Request{BinaryKeys: []string{"sparc"}, Keys: []string{"fpu"}},
			machines: []MachineView{mv("a", "x86_64"), mv("b", "sparc"), mv("c", "sparc", "fpu")},
			want:     "c", wantWhy: "1 machine lacks binary key sparc; 1 lacks key fpu",
		},
		{
			name:     "machines: unnamed machines",
			req:      Request{BinaryKeys: x86, Machines: []string{"flute", "viola"}},
			machines: []MachineView{mv("flute", "x86_64"), mv("oboe", "x86_64"), mv("tuba", "x86_64")},
			want:     "flute", wantWhy: "2 machines are not named in machines=",
		},
		{
			name:     "machines: one unnamed machine, unknown name",
			req:      Request{BinaryKeys: x86, Machines: []string{"nosuch"}},
			machines: []MachineView{mv("flute", "x86_64")},
			wantWhy:  "1 machine is not named in machines=",
		},
		{
			name: "attrs: failed comparison prints its negation",
			req:  Request{BinaryKeys: x86, Requirements: []Requirement{{"mem", ">", 10}}},
			machines: []MachineView{
				with(mv("a", "x86_64"), attrs(map[string]float64{"mem": 8})),
				with(mv("b", "x86_64"), attrs(map[string]float64{"mem": 10})),
				with(mv("c", "x86_64"), attrs(map[string]float64{"mem": 32})),
			},
			want: "c", wantWhy: "2 machines have mem<=10",
		},
		{
			name: "attrs: missing attribute",
			req:  Request{BinaryKeys: x86, Requirements: []Requirement{{"gpus", ">=", 1}}},
			machines: []MachineView{
				with(mv("a", "x86_64"), attrs(map[string]float64{"mem": 8})),
			},
			wantWhy: "1 machine lacks attribute gpus",
		},
		{
			name: "attrs: every operator negated, first failure counts",
			req: Request{BinaryKeys: x86, Requirements: []Requirement{
				{"a", ">=", 2}, {"b", "<", 0.5}, {"c", "<=", 3}, {"d", "==", 1}, {"e", "!=", 1e30},
			}},
			machines: []MachineView{
				with(mv("m1", "x86_64"), attrs(map[string]float64{"a": 1})),
				with(mv("m2", "x86_64"), attrs(map[string]float64{"a": 2, "b": 1})),
				with(mv("m3", "x86_64"), attrs(map[string]float64{"a": 2, "b": 0, "c": 4})),
				with(mv("m4", "x86_64"), attrs(map[string]float64{"a": 2, "b": 0, "c": 3, "d": 0})),
				with(mv("m5", "x86_64"), attrs(map[string]float64{"a": 2, "b": 0, "c": 3, "d": 1, "e": 1e30})),
				with(mv("m6", "x86_64"), attrs(map[string]float64{"a": 2, "b": 0, "c": 3, "d": 1})),
			},
			wantWhy: "1 machine has a<2; 1 has b>=0.5; 1 has c>3; 1 has d!=1; 1 has e==1e+30; 1 lacks attribute e",
		},
		{
			name:     "attrs: unknown operator",
			req:      Request{BinaryKeys: x86, Requirements: []Requirement{{"mem", "~", 10}}},
			machines: []MachineView{with(mv("a", "x86_64"), attrs(map[string]float64{"mem": 10}))},
			wantWhy:  "1 machine cannot meet mem~10 (unknown operator)",
		},
		{
			name: "mounts: lacking the first mount",
			req:  Request{BinaryKeys: x86, Mounts: []string{"/usr/u/fred/data", "/scratch"}},
			machines: []MachineView{
				mv("a", "x86_64"),
				with(mv("b", "x86_64"), mounts("/scratch")),
				with(mv("c", "x86_64"), mounts("/usr/u/fred/data")),
				with(mv("d", "x86_64"), mounts("/scratch", "/usr/u/fred/data")),
			},
			want: "d", wantWhy: "2 machines lack mount /usr/u/fred/data; 1 lacks mount /scratch",
		},
		{
			name: "reservation: another user's machine",
			req:  Request{BinaryKeys: x86, Owner: "fred"},
			machines: []MachineView{
				with(mv("a", "x86_64"), reservedBy("tclark")),
				with(mv("b", "x86_64"), reservedBy("fred"), load(3)),
			},
			want: "b", wantWhy: "1 machine is reserved by another user",
		},
		{
			name: "reservation: ownerless job",
			req:  Request{BinaryKeys: x86},
			machines: []MachineView{
				with(mv("a", "x86_64"), reservedBy("tclark")),
				with(mv("b", "x86_64"), reservedBy("fred")),
			},
			wantWhy: "2 machines are reserved by another user",
		},
		{
			name:     "up: down or draining",
			req:      Request{BinaryKeys: x86},
			machines: []MachineView{with(mv("a", "x86_64"), down), with(mv("b", "x86_64"), down)},
			wantWhy:  "2 machines are down or draining",
		},
		{
			name:     "awake: asleep",
			req:      Request{BinaryKeys: x86},
			machines: []MachineView{with(mv("a", "x86_64"), asleep), with(mv("b", "x86_64"), load(5))},
			want:     "b", wantWhy: "1 machine is asleep",
		},
		{
			name: "awake: asleep, counted per reason",
			req:  Request{BinaryKeys: x86},
			machines: []MachineView{
				with(mv("a", "x86_64"), asleepFor("load 3.2 > 2")), with(mv("b", "x86_64"), asleepFor("console login")),
				with(mv("c", "x86_64"), asleepFor("console login")), with(mv("d", "x86_64"), down, asleepFor("outside window")),
			},
			wantWhy: "1 machine is down or draining; 2 are asleep (console login); 1 is asleep (load 3.2 > 2)",
		},
		{
			name:     "slot: full",
			req:      Request{BinaryKeys: x86},
			machines: []MachineView{with(mv("a", "x86_64"), full), with(mv("b", "x86_64"), slots(0))},
			wantWhy:  "2 machines have no free slot",
		},
		{
			name: "per-machine: bound reached",
			req:  Request{JobID: 7, BinaryKeys: x86, MaxPerMachine: 2},
			machines: []MachineView{
				with(mv("a", "x86_64"), jobs(map[uint64]int{7: 2})),
				with(mv("b", "x86_64"), jobs(map[uint64]int{7: 1, 8: 3})),
			},
			want: "b", wantWhy: "1 machine already runs max_per_machine instances of this job",
		},
		{
			name: "per-machine: other jobs do not count",
			req:  Request{JobID: 7, BinaryKeys: x86, MaxPerMachine: 1},
			machines: []MachineView{
				with(mv("a", "x86_64"), jobs(map[uint64]int{7: 1})),
				with(mv("b", "x86_64"), jobs(map[uint64]int{7: 3})),
				with(mv("c", "x86_64"), jobs(map[uint64]int{8: 3})),
			},
			want: "c", wantWhy: "2 machines already run max_per_machine instances of this job",
		},
		{
			name: "memory: not enough free, or unknown",
			req:  Request{BinaryKeys: x86, MemoryMB: 512},
			machines: []MachineView{
				with(mv("a", "x86_64"), memory(1024, 600)),
				mv("b", "x86_64"),
				with(mv("c", "x86_64"), memory(1024, 512)),
			},
			want: "c", wantWhy: "2 machines lack 512 MB free memory",
		},
		{
			name:     "memory: one machine",
			req:      Request{BinaryKeys: x86, MemoryMB: 512},
			machines: []MachineView{with(mv("a", "x86_64"), memory(256, 0))},
			wantWhy:  "1 machine lacks 512 MB free memory",
		},
		{
			name: "each machine counted by the first filter only",
			req: Request{
				JobID: 3, Owner: "fred", BinaryKeys: x86, Keys: []string{"fpu"},
				Requirements: []Requirement{{"mem", ">", 10}}, Mounts: []string{"/d"},
				MaxPerMachine: 1, MemoryMB: 100,
			},
			machines: func() []MachineView {
				ok := func(n string, fs ...func(*MachineView)) MachineView {
					base := []func(*MachineView){
						attrs(map[string]float64{"mem": 64}), mounts("/d"), memory(1000, 0),
					}
					return with(mv(n, "x86_64", "fpu"), append(base, fs...)...)
				}
				return []MachineView{
					with(mv("bin", "sparc", "fpu"), down, full),
					with(mv("key", "x86_64"), down),
					ok("attr", attrs(map[string]float64{"mem": 1}), down),
					ok("mount", mounts("/e"), full),
					ok("resv", reservedBy("tclark"), asleep),
					ok("down", down, asleep, full),
					ok("sleep", asleep, full),
					ok("full1", full),
					ok("full2", full, jobs(map[uint64]int{3: 1})),
					ok("per", jobs(map[uint64]int{3: 1}), memory(1, 0)),
					ok("mem", memory(100, 1)),
				}
			}(),
			wantWhy: "1 machine lacks binary key x86_64; 1 lacks key fpu; 1 has mem<=10; " +
				"1 lacks mount /d; 1 is reserved by another user; 1 is down or draining; " +
				"1 is asleep; 2 have no free slot; 1 already runs max_per_machine instances of this job; " +
				"1 lacks 100 MB free memory",
		},
		{
			name:     "no machines",
			req:      Request{BinaryKeys: x86},
			machines: nil,
			wantWhy:  "no machines in the pool",
		},
		{
			name:     "placed cleanly",
			req:      Request{BinaryKeys: x86},
			machines: []MachineView{mv("a", "x86_64")},
			want:     "a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := match(t, tt.req, tt.machines)
			if n := name(got, tt.machines); n != tt.want {
				t.Errorf("machine = %q, want %q", n, tt.want)
			}
			if why := got.Why(); why != tt.wantWhy {
				t.Errorf("Why() = %q, want %q", why, tt.wantWhy)
			}
		})
	}
}

func TestMatchKey(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		machines []MachineView
		want     string
		wantKey  string
	}{
		{"exact key", []string{"sparc"}, []MachineView{mv("b", "sparc")}, "b", "sparc"},
		{"exact key preferred over wildcard", []string{"*", "sparc"}, []MachineView{mv("b", "sparc")}, "b", "sparc"},
		{
			"wildcard used where no exact key", []string{"*", "sparc"},
			[]MachineView{mv("a", "x86_64"), with(mv("b", "sparc"), load(3))}, "a", "*",
		},
		{"first of two keys the machine has", []string{"i386", "x86_64"}, []MachineView{mv("a", "i386", "linux", "x86_64")}, "a", "i386"},
		{"request order, not sorted order", []string{"x86_64", "i386"}, []MachineView{mv("a", "i386", "linux", "x86_64")}, "a", "x86_64"},
		{
			"multi-arch job goes to the less loaded arch", []string{"mips", "sparc"},
			[]MachineView{mv("a", "x86_64"), with(mv("b", "mips"), load(2)), with(mv("c", "sparc"), load(1))},
			"c", "sparc",
		},
		{"nothing placed, no key", []string{"vax"}, []MachineView{mv("a", "x86_64")}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := match(t, Request{JobID: 1, BinaryKeys: tt.keys}, tt.machines)
			if n := name(got, tt.machines); n != tt.want {
				t.Errorf("machine = %q, want %q", n, tt.want)
			}
			if got.Key != tt.wantKey {
				t.Errorf("key = %q, want %q", got.Key, tt.wantKey)
			}
		})
	}
}

func TestMatchMatching(t *testing.T) {
	machines := []MachineView{
		mv("a", "sparc"),                              // binary
		with(mv("b", "x86_64"), full),                 // matching, full
		with(mv("c", "x86_64"), down),                 // matching, down
		with(mv("d", "x86_64"), reservedBy("tclark")), // matching, reserved
	}
	got := match(t, Request{BinaryKeys: []string{"x86_64"}, Owner: "fred"}, machines)
	if got.Machine != -1 || got.Matching != 3 {
		t.Errorf("machine %d, matching %d; want -1, 3", got.Machine, got.Matching)
	}
	got = match(t, Request{BinaryKeys: []string{"x86_64"}, Owner: "tclark"}, machines)
	if name(got, machines) != "d" || got.Matching != 3 {
		t.Errorf("machine %q, matching %d; want d, 3", name(got, machines), got.Matching)
	}
}

func TestMatchLoadBalance(t *testing.T) {
	tests := []struct {
		name     string
		machines []MachineView
		want     string
	}{
		{
			name:     "rating 16 load 4 beats rating 1 load 1",
			machines: []MachineView{with(mv("slow", "k"), rating(1), load(1)), with(mv("fast", "k"), rating(16), load(4))},
			want:     "fast",
		},
		{
			name:     "rating 1 load 0.5 beats rating 16 load 9",
			machines: []MachineView{with(mv("fast", "k"), rating(16), load(9)), with(mv("slow", "k"), rating(1), load(0.5))},
			want:     "slow",
		},
		{
			name:     "imposed load counts",
			machines: []MachineView{with(mv("busy", "k"), imposed(2)), with(mv("idle", "k"), load(1.5))},
			want:     "idle",
		},
		{
			name:     "imposed load divided by rating",
			machines: []MachineView{with(mv("fast", "k"), rating(4), imposed(3)), with(mv("slow", "k"), imposed(1))},
			want:     "fast",
		},
		{
			name:     "running alone is not load",
			machines: []MachineView{with(mv("a", "k"), func(m *MachineView) { m.Running = 3 }), with(mv("b", "k"), load(0.1))},
			want:     "a",
		},
		{
			name:     "rating 0 means 1",
			machines: []MachineView{with(mv("zero", "k"), rating(0), load(1)), with(mv("one", "k"), rating(1), load(1.5))},
			want:     "zero",
		},
		{
			name:     "rating 0 is not infinitely slow",
			machines: []MachineView{with(mv("zero", "k"), rating(0), load(1)), with(mv("two", "k"), rating(2), load(1.5))},
			want:     "two",
		},
		{
			name:     "negative rating means 1",
			machines: []MachineView{with(mv("neg", "k"), rating(-4), load(1)), with(mv("one", "k"), rating(1), load(1.5))},
			want:     "neg",
		},
		{
			name:     "NaN load counts as idle",
			machines: []MachineView{with(mv("busy", "k"), load(0.5)), with(mv("nan", "k"), load(math.NaN()))},
			want:     "nan",
		},
		{
			name:     "infinite load loses",
			machines: []MachineView{with(mv("inf", "k"), load(math.Inf(1))), with(mv("busy", "k"), load(1e9))},
			want:     "busy",
		},
		{
			name: "spread: an instance of the job weighs one unit of load",
			machines: []MachineView{
				with(mv("has", "k"), jobs(map[uint64]int{1: 1}), imposed(1)),
				with(mv("busier", "k"), load(1.5)),
			},
			want: "busier",
		},
		{
			name: "spread: other jobs are only load",
			machines: []MachineView{
				with(mv("other", "k"), jobs(map[uint64]int{2: 1}), imposed(1)),
				with(mv("busier", "k"), load(1.5)),
			},
			want: "other",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := match(t, Request{JobID: 1, BinaryKeys: []string{"k"}}, tt.machines)
			if n := name(got, tt.machines); n != tt.want {
				t.Errorf("machine = %q, want %q", n, tt.want)
			}
		})
	}
}

func TestEffectiveLoad(t *testing.T) {
	tests := []struct {
		name string
		m    MachineView
		want float64
	}{
		{"idle", MachineView{}, 0},
		{"load and imposed", MachineView{Load: 1.5, ImposedLoad: 2, Rating: 1}, 3.5},
		{"rating divides", MachineView{Load: 4, ImposedLoad: 4, Rating: 16}, 0.5},
		{"rating 0 is 1", MachineView{Load: 2, Rating: 0}, 2},
		{"NaN rating is 1", MachineView{Load: 2, Rating: math.NaN()}, 2},
		{"negative load is 0", MachineView{Load: -3, ImposedLoad: 1}, 1},
		{"negative imposed is 0", MachineView{Load: 1, ImposedLoad: -5}, 1},
		{"running is not load", MachineView{Running: 3}, 0},
		{"infinite over infinite", MachineView{Load: math.Inf(1), Rating: math.Inf(1)}, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := effectiveLoad(&tt.m); got != tt.want {
				t.Errorf("effectiveLoad(%+v) = %v, want %v", tt.m, got, tt.want)
			}
		})
	}
}

// equalMachines returns n identical idle machines named node0 ... node<n-1>.
func equalMachines(n int) []MachineView {
	ms := make([]MachineView, n)
	for i := range ms {
		ms[i] = mv(fmt.Sprintf("node%d", i), "x86_64")
	}
	return ms
}

func TestMatchTieBreak(t *testing.T) {
	x86 := []string{"x86_64"}
	t.Run("same input same answer", func(t *testing.T) {
		ms := equalMachines(10)
		req := Request{JobID: 42, Instance: 3, BinaryKeys: x86}
		first := match(t, req, ms)
		for range 50 {
			if got := match(t, req, ms); !reflect.DeepEqual(got, first) {
				t.Fatalf("result = %+v, want %+v as before", got, first)
			}
		}
	})
	t.Run("answer independent of machine order", func(t *testing.T) {
		ms := equalMachines(10)
		rev := slices.Clone(ms)
		slices.Reverse(rev)
		for job := range uint64(20) {
			req := Request{JobID: job, BinaryKeys: x86}
			a, b := name(match(t, req, ms), ms), name(match(t, req, rev), rev)
			if a != b {
				t.Errorf("job %d: reversed order chose %q, want %q", job, b, a)
			}
		}
	})
	t.Run("different jobs spread over equal machines", func(t *testing.T) {
		const machines, jobs = 10, 500
		ms := equalMachines(machines)
		wins := make([]int, machines)
		for job := range uint64(jobs) {
			wins[match(t, Request{JobID: job + 1, BinaryKeys: x86}, ms).Machine]++
		}
		for i, w := range wins {
			// Fair share is 50; allow wide slack, but no machine may be
			// starved or favoured several times over.
			if w < 20 || w > 100 {
				t.Errorf("%s won %d of %d jobs, want 20..100 (wins %v)", ms[i].Name, w, jobs, wins)
			}
		}
	})
	t.Run("duplicate names fall back to the lowest index", func(t *testing.T) {
		ms := []MachineView{mv("same", "k"), mv("same", "k")}
		if got := match(t, Request{BinaryKeys: []string{"k"}}, ms).Machine; got != 0 {
			t.Errorf("machine = %d, want 0", got)
		}
	})
	t.Run("lower cost beats any hash", func(t *testing.T) {
		ms := equalMachines(10)
		for i := range ms {
			if i != 7 {
				ms[i].Load = 0.01
			}
		}
		for job := range uint64(20) {
			if got := match(t, Request{JobID: job, BinaryKeys: x86}, ms).Machine; got != 7 {
				t.Errorf("job %d: machine = %d, want 7", job, got)
			}
		}
	})
}

// TestMatcherConcurrentUse runs one Matcher from several goroutines, each
// with its own Pool; run under -race it proves the Matcher shares no
// mutable state.
func TestMatcherConcurrentUse(t *testing.T) {
	m := New()
	ms := equalMachines(50)
	req := Request{JobID: 3, BinaryKeys: []string{"x86_64"}}
	want := m.Match(req, ms).Machine
	const workers = 4
	got := make([]int, workers)
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			p := NewPool(ms)
			for range 20 {
				got[w] = m.MatchPool(req, p).Machine
			}
		}()
	}
	for range workers {
		<-done
	}
	for w, g := range got {
		if g != want {
			t.Errorf("worker %d: machine = %d, want %d", w, g, want)
		}
	}
}
