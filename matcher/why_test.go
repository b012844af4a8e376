package matcher

import "testing"

func TestWhy(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"empty pool", Result{Machine: -1}, "no machines in the pool"},
		{"placed, nothing rejected", Result{Machine: 0, Key: "k"}, ""},
		{
			"plural then singular",
			Result{Machine: -1, Rejections: []Rejection{
				{"binary", 3, "lack binary key sparc"},
				{"slot", 1, "has no free slot"},
			}},
			"3 machines lack binary key sparc; 1 has no free slot",
		},
		{
			"singular then plural",
			Result{Machine: -1, Rejections: []Rejection{
				{"binary", 1, "lacks binary key sparc|mips"},
				{"up", 2, "are down or asleep"},
			}},
			"1 machine lacks binary key sparc|mips; 2 are down or asleep",
		},
		{
			"placed with rejections",
			Result{Machine: 4, Key: "k", Rejections: []Rejection{{"up", 1, "is down or asleep"}}},
			"1 machine is down or asleep",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Why(); got != tt.want {
				t.Errorf("Why() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMatchWhy(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		machines []MachineView
		want     string
	}{
		{"no machines", []string{"x86_64"}, nil, "no machines in the pool"},
		{
			"binary keys",
			[]string{"mips", "sparc"},
			[]MachineView{mv("a", "x86_64"), mv("b", "x86_64"), mv("c", "aarch64")},
			"3 machines lack binary key mips|sparc",
		},
		{
			"every filter",
			[]string{"sparc"},
			[]MachineView{
				mv("a", "x86_64"),
				with(mv("b", "sparc"), down),
				with(mv("c", "sparc"), down),
				with(mv("d", "sparc"), full),
			},
			"1 machine lacks binary key sparc; 2 are down or asleep; 1 has no free slot",
		},
		{
			"one full machine",
			[]string{"*"},
			[]MachineView{with(mv("a", "x86_64"), full)},
			"1 machine has no free slot",
		},
		{
			"all full",
			[]string{"*"},
			[]MachineView{with(mv("a", "x86_64"), full), with(mv("b", "x86_64"), full)},
			"2 machines have no free slot",
		},
		{
			"placed despite a down machine",
			[]string{"x86_64"},
			[]MachineView{with(mv("a", "x86_64"), down), mv("b", "x86_64")},
			"1 machine is down or asleep",
		},
		{"placed cleanly", []string{"x86_64"}, []MachineView{mv("a", "x86_64")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := match(t, Request{JobID: 5, BinaryKeys: tt.keys}, tt.machines).Why()
			if got != tt.want {
				t.Errorf("Why() = %q, want %q", got, tt.want)
			}
		})
	}
}
