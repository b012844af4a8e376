package matcher

import (
	"fmt"
	"slices"
	"testing"
)

// benchMachines returns n machines of mixed architectures, ratings, loads and
// extra keys, with a few down or full, built without randomness.
func benchMachines(n int) []MachineView {
	archs := []string{"x86_64", "x86_64", "x86_64", "aarch64", "x86_64", "aarch64", "x86_64", "sparc"}
	extras := []string{"fortran", "gpu", "matlab", "scratch", "sas"}
	ms := make([]MachineView, n)
	for i := range ms {
		keys := []string{archs[i%len(archs)], "linux"}
		for j, e := range extras {
			if (i>>j)&1 == 1 {
				keys = append(keys, e)
			}
		}
		slices.Sort(keys)
		ms[i] = MachineView{
			Name:    fmt.Sprintf("node%05d.example.org", i),
			Keys:    keys,
			Up:      i%50 != 0,
			Slots:   4 + i%4*4,
			Running: i % 7,
			Load:    float64(i%13) / 4,
			Rating:  float64(1 + i%3),
		}
	}
	return ms
}

// BenchmarkMatch10k is one Match of a two-architecture job among 10,000
// machines, through a Pool (the scheduler's path) and through a plain slice.
func BenchmarkMatch10k(b *testing.B) {
	ms := benchMachines(10_000)
	req := Request{JobID: 12345, Instance: 7, BinaryKeys: []string{"aarch64", "x86_64"}}
	m := New()
	b.Run("pool", func(b *testing.B) {
		p := NewPool(ms)
		b.ReportAllocs()
		for b.Loop() {
			if m.MatchPool(req, p).Machine < 0 {
				b.Fatal("no machine")
			}
		}
	})
	b.Run("slice", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if m.Match(req, ms).Machine < 0 {
				b.Fatal("no machine")
			}
		}
	})
}

// BenchmarkNewPool10k indexes 10,000 machines, once per planning round.
func BenchmarkNewPool10k(b *testing.B) {
	ms := benchMachines(10_000)
	b.ReportAllocs()
	for b.Loop() {
		NewPool(ms)
	}
}
