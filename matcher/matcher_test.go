package matcher

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

// match runs req through both Matcher.Match and a fresh Pool, checks they
// agree, and returns the answer.
func match(t *testing.T, req Request, machines []MachineView) Result {
	t.Helper()
	before := cloneViews(machines)
	m := New()
	got := m.Match(req, machines)
	// Compared as text so that a NaN Load equals itself.
	if fmt.Sprintf("%+v", machines) != fmt.Sprintf("%+v", before) {
		t.Fatalf("Match changed its input: got %+v, want %+v", machines, before)
	}
	fromPool := m.MatchPool(req, NewPool(machines))
	if !reflect.DeepEqual(fromPool, got) {
		t.Fatalf("MatchPool = %+v, Match = %+v; want them equal", fromPool, got)
	}
	return got
}

func cloneViews(ms []MachineView) []MachineView {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Keys = slices.Clone(out[i].Keys)
	}
	return out
}

// mv is an up, idle machine with 4 slots.
func mv(name string, keys ...string) MachineView {
	return MachineView{Name: name, Keys: keys, Up: true, Slots: 4}
}

func with(m MachineView, f func(*MachineView)) MachineView {
	f(&m)
	return m
}

func down(m *MachineView) { m.Up = false }
func full(m *MachineView) { m.Running = m.Slots }

func load(l float64) func(*MachineView) { return func(m *MachineView) { m.Load = l } }

func rated(r float64, l float64) func(*MachineView) {
	return func(m *MachineView) { m.Rating, m.Load = r, l }
}

// name returns the chosen machine's name, or "" when none was chosen.
func name(r Result, machines []MachineView) string {
	if r.Machine < 0 {
		return ""
	}
	return machines[r.Machine].Name
}

func TestMatchFilters(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		machines []MachineView
		want     string // machine name, "" for none
		wantKey  string
		wantRej  []Rejection
	}{
		{
			name:     "exact key",
			keys:     []string{"sparc"},
			machines: []MachineView{mv("a", "x86_64"), mv("b", "sparc")},
			want:     "b", wantKey: "sparc",
			wantRej: []Rejection{{"binary", 1, "lacks binary key sparc"}},
		},
		{
			name:     "wildcard matches every machine",
			keys:     []string{"*"},
			machines: []MachineView{with(mv("a", "x86_64"), load(2)), mv("b", "sparc")},
			want:     "b", wantKey: "*",
		},
		{
			name:     "exact key preferred over wildcard",
			keys:     []string{"*", "sparc"},
			machines: []MachineView{mv("b", "sparc")},
			want:     "b", wantKey: "sparc",
		},
		{
			name:     "wildcard used where no exact key",
			keys:     []string{"*", "sparc"},
			machines: []MachineView{mv("a", "x86_64"), with(mv("b", "sparc"), load(3))},
			want:     "a", wantKey: "*",
		},
		{
			name: "multi-arch job goes to the less loaded arch",
			keys: []string{"mips", "sparc"},
			machines: []MachineView{
				mv("a", "x86_64"),
				with(mv("b", "mips"), load(2)),
				with(mv("c", "sparc"), load(1)),
			},
			want: "c", wantKey: "sparc",
			wantRej: []Rejection{{"binary", 1, "lacks binary key mips|sparc"}},
		},
		{
			name:     "machine with two of the keys gets the first",
			keys:     []string{"i386", "x86_64"},
			machines: []MachineView{mv("a", "i386", "linux", "x86_64")},
			want:     "a", wantKey: "i386",
		},
		{
			name:     "key known to no machine",
			keys:     []string{"vax"},
			machines: []MachineView{mv("a", "x86_64"), mv("b", "sparc")},
			wantRej:  []Rejection{{"binary", 2, "lack binary key vax"}},
		},
		{
			name:     "job with no binary key",
			machines: []MachineView{mv("a", "x86_64")},
			wantRej:  []Rejection{{"binary", 1, "lacks binary key (the job names none)"}},
		},
		{
			name:     "down machine skipped",
			keys:     []string{"x86_64"},
			machines: []MachineView{with(mv("a", "x86_64"), down), with(mv("b", "x86_64"), load(9))},
			want:     "b", wantKey: "x86_64",
			wantRej: []Rejection{{"up", 1, "is down or asleep"}},
		},
		{
			name:     "full machine skipped",
			keys:     []string{"x86_64"},
			machines: []MachineView{with(mv("a", "x86_64"), full), with(mv("b", "x86_64"), load(9))},
			want:     "b", wantKey: "x86_64",
			wantRej: []Rejection{{"slot", 1, "has no free slot"}},
		},
		{
			name: "machine with no slots is full",
			keys: []string{"x86_64"},
			machines: []MachineView{
				with(mv("a", "x86_64"), func(m *MachineView) { m.Slots = 0 }),
			},
			wantRej: []Rejection{{"slot", 1, "has no free slot"}},
		},
		{
			name: "each machine counted by the first filter only",
			keys: []string{"x86_64"},
			machines: []MachineView{
				with(with(mv("a", "sparc"), down), full),
				with(with(mv("b", "x86_64"), down), full),
				with(mv("c", "x86_64"), down),
				with(mv("d", "x86_64"), full),
				with(mv("e", "x86_64"), full),
			},
			wantRej: []Rejection{
				{"binary", 1, "lacks binary key x86_64"},
				{"up", 2, "are down or asleep"},
				{"slot", 2, "have no free slot"},
			},
		},
		{
			name: "no machines",
			keys: []string{"x86_64"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{JobID: 1, BinaryKeys: tt.keys}
			got := match(t, req, tt.machines)
			if n := name(got, tt.machines); n != tt.want {
				t.Errorf("machine = %q, want %q", n, tt.want)
			}
			if got.Key != tt.wantKey {
				t.Errorf("key = %q, want %q", got.Key, tt.wantKey)
			}
			if !reflect.DeepEqual(got.Rejections, tt.wantRej) {
				t.Errorf("rejections = %+v, want %+v", got.Rejections, tt.wantRej)
			}
		})
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
			machines: []MachineView{with(mv("slow", "k"), rated(1, 1)), with(mv("fast", "k"), rated(16, 4))},
			want:     "fast",
		},
		{
			name:     "rating 1 load 0.5 beats rating 16 load 9",
			machines: []MachineView{with(mv("fast", "k"), rated(16, 9)), with(mv("slow", "k"), rated(1, 0.5))},
			want:     "slow",
		},
		{
			name: "running instances count as load",
			machines: []MachineView{
				with(mv("busy", "k"), func(m *MachineView) { m.Running = 2 }),
				with(mv("idle", "k"), load(1.5)),
			},
			want: "idle",
		},
		{
			name: "running instances divided by rating",
			machines: []MachineView{
				with(mv("fast", "k"), func(m *MachineView) { m.Rating, m.Running = 4, 3 }),
				with(mv("slow", "k"), func(m *MachineView) { m.Running = 1 }),
			},
			want: "fast",
		},
		{
			name:     "rating 0 means 1",
			machines: []MachineView{with(mv("zero", "k"), rated(0, 1)), with(mv("one", "k"), rated(1, 1.5))},
			want:     "zero",
		},
		{
			name:     "rating 0 is not infinitely slow",
			machines: []MachineView{with(mv("zero", "k"), rated(0, 1)), with(mv("two", "k"), rated(2, 1.5))},
			want:     "two",
		},
		{
			name:     "negative rating means 1",
			machines: []MachineView{with(mv("neg", "k"), rated(-4, 1)), with(mv("one", "k"), rated(1, 1.5))},
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
		{"load and running", MachineView{Load: 1.5, Running: 2, Rating: 1}, 3.5},
		{"rating divides", MachineView{Load: 4, Rating: 16}, 0.25},
		{"rating 0 is 1", MachineView{Load: 2, Rating: 0}, 2},
		{"NaN rating is 1", MachineView{Load: 2, Rating: math.NaN()}, 2},
		{"negative load is 0", MachineView{Load: -3, Running: 1}, 1},
		{"negative running is 0", MachineView{Load: 1, Running: -5}, 1},
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
	t.Run("same input same answer", func(t *testing.T) {
		ms := equalMachines(10)
		req := Request{JobID: 42, Instance: 3, BinaryKeys: []string{"x86_64"}}
		first := name(match(t, req, ms), ms)
		for range 50 {
			if got := name(match(t, req, ms), ms); got != first {
				t.Fatalf("machine = %q, want %q as before", got, first)
			}
		}
	})
	t.Run("answer independent of machine order", func(t *testing.T) {
		ms := equalMachines(10)
		rev := slices.Clone(ms)
		slices.Reverse(rev)
		for job := range uint64(20) {
			req := Request{JobID: job, BinaryKeys: []string{"x86_64"}}
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
			r := match(t, Request{JobID: job + 1, BinaryKeys: []string{"x86_64"}}, ms)
			wins[r.Machine]++
		}
		for i, w := range wins {
			// Fair share is 50; allow wide slack, but no machine may be
			// starved or favoured several times over.
			if w < 20 || w > 100 {
				t.Errorf("%s won %d of %d jobs, want 20..100 (wins %v)", ms[i].Name, w, jobs, wins)
			}
		}
	})
	t.Run("different instances spread over equal machines", func(t *testing.T) {
		ms := equalMachines(4)
		seen := map[string]bool{}
		for inst := range 40 {
			seen[name(match(t, Request{JobID: 9, Instance: inst, BinaryKeys: []string{"x86_64"}}, ms), ms)] = true
		}
		if len(seen) != len(ms) {
			t.Errorf("instances used %d machines, want %d", len(seen), len(ms))
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
			if got := match(t, Request{JobID: job, BinaryKeys: []string{"x86_64"}}, ms).Machine; got != 7 {
				t.Errorf("job %d: machine = %d, want 7", job, got)
			}
		}
	})
}

// TestMatcherConcurrentUse runs one Matcher from several goroutines; run
// under -race it proves Match shares no mutable state.
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
			for range 20 {
				got[w] = m.Match(req, ms).Machine
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
