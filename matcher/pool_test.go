package matcher

import (
	"fmt"
	"reflect"
	"testing"
)

// placeAll places n instances of job through one Pool, taking a slot after
// each placement, and returns instances per machine name plus the last
// result (the first failure, if any).
func placeAll(t *testing.T, p *Pool, job uint64, keys []string, n int) (map[string]int, Result) {
	t.Helper()
	m := New()
	got := map[string]int{}
	var r Result
	for inst := range n {
		r = m.MatchPool(Request{JobID: job, Instance: inst, BinaryKeys: keys}, p)
		if r.Machine < 0 {
			break
		}
		got[p.Machine(r.Machine).Name]++
		p.Take(r.Machine)
	}
	return got, r
}

func TestPoolBatch(t *testing.T) {
	slots := func(n int) func(*MachineView) { return func(m *MachineView) { m.Slots = n } }
	tests := []struct {
		name     string
		machines []MachineView
		keys     []string
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
				with(with(mv("d", "x86_64"), slots(8)), down),
			},
			keys:    []string{"x86_64"},
			n:       7,
			want:    map[string]int{"a": 2, "b": 3, "c": 1},
			wantWhy: "1 machine is down or asleep; 3 have no free slot",
		},
		{
			name: "equal machines share evenly",
			machines: []MachineView{
				mv("a", "x86_64"), mv("b", "x86_64"), mv("c", "x86_64"), mv("d", "x86_64"),
			},
			keys: []string{"x86_64"},
			n:    8,
			want: map[string]int{"a": 2, "b": 2, "c": 2, "d": 2},
		},
		{
			name: "fast machine takes more",
			machines: []MachineView{
				with(with(mv("fast", "x86_64"), slots(8)), rated(4, 0)),
				with(with(mv("slow", "x86_64"), slots(8)), rated(1, 0)),
			},
			keys: []string{"x86_64"},
			n:    5,
			want: map[string]int{"fast": 4, "slow": 1},
		},
		{
			name: "existing load is counted",
			machines: []MachineView{
				with(mv("a", "x86_64"), load(2)),
				mv("b", "x86_64"),
			},
			keys: []string{"x86_64"},
			n:    4,
			want: map[string]int{"a": 1, "b": 3},
		},
		{
			name: "multi-arch job spreads over both archs",
			machines: []MachineView{
				with(mv("m", "mips"), slots(2)),
				with(mv("s", "sparc"), slots(2)),
				mv("x", "x86_64"),
			},
			keys:    []string{"mips", "sparc"},
			n:       5,
			want:    map[string]int{"m": 2, "s": 2},
			wantWhy: "1 machine lacks binary key mips|sparc; 2 have no free slot",
		},
		{
			name:     "unsorted keys are fine in a Pool",
			machines: []MachineView{mv("a", "x86_64", "linux", "big"), mv("b", "zz", "aa")},
			keys:     []string{"big"},
			n:        2,
			want:     map[string]int{"a": 2},
			wantWhy:  "1 machine lacks binary key big",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(tt.machines)
			got, last := placeAll(t, p, 77, tt.keys, tt.n)
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
	machines := []MachineView{mv("a", "k"), mv("b", "k")}
	p := NewPool(machines)
	p.Take(1)
	p.Take(1)
	if got, want := p.Len(), 2; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got, want := p.Machine(1).Running, 2; got != want {
		t.Errorf("Machine(1).Running = %d, want %d", got, want)
	}
	if got, want := machines[1].Running, 0; got != want {
		t.Errorf("caller's Running = %d, want %d (NewPool copies)", got, want)
	}
	if got, want := New().MatchPool(Request{BinaryKeys: []string{"k"}}, p).Machine, 0; got != want {
		t.Errorf("after Take, machine = %d, want %d", got, want)
	}
}

func TestPoolMatchAllocs(t *testing.T) {
	ms := make([]MachineView, 100)
	for i := range ms {
		ms[i] = mv(fmt.Sprintf("n%d", i), "linux", "x86_64")
	}
	p := NewPool(ms)
	m := New()
	req := Request{JobID: 1, BinaryKeys: []string{"x86_64"}}
	m.MatchPool(req, p) // warm the scratch space
	if n := testing.AllocsPerRun(100, func() { m.MatchPool(req, p) }); n != 0 {
		t.Errorf("MatchPool allocations = %v, want 0 when nothing is rejected", n)
	}
}
