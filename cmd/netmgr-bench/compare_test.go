package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name   string
		s, i   float64
		higher bool
		want   string
	}{
		{"latency lower when secure", 9, 10, false, "ok (not worse)"},
		{"latency 10% higher", 11, 10, false, "ok (10% worse)"},
		{"latency 20% higher", 12, 10, false, "OVER BUDGET: 20% worse"},
		{"rate 10% lower", 900, 1000, true, "ok (10% worse)"},
		{"rate 30% lower", 700, 1000, true, "OVER BUDGET: 30% worse"},
		{"rate higher when secure", 1100, 1000, true, "ok (not worse)"},
		{"count from zero", 2, 0, false, "worse by 2.00 (insecure 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judge(tt.s, tt.i, tt.higher); got != tt.want {
				t.Errorf("judge(%v, %v, %v) = %q, want %q", tt.s, tt.i, tt.higher, got, tt.want)
			}
		})
	}
}

func TestMedianOf(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"two", []float64{4, 2}, 3},
		{"three", []float64{5, 1, 3}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := medianOf(tt.in); got != tt.want {
				t.Errorf("medianOf(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestCompareFiles compares an ABBA set of -json reports written to files.
func TestCompareFiles(t *testing.T) {
	fig := func(name, unit string, med float64) figure {
		return figure{Name: name, Unit: unit, Sample: summary{N: 1, Min: med, Median: med, Max: med}}
	}
	reps := []report{
		{Insecure: false, LoadBefore: "1.00 1.00 1.00", LoadAfter: "1.50 1.10 1.00",
			Figures: []figure{fig("latency", "ms", 10), fig("rate", "jobs/s", 900)}},
		{Insecure: true, Figures: []figure{fig("latency", "ms", 8), fig("rate", "jobs/s", 1000)}},
		{Insecure: true, Figures: []figure{fig("latency", "ms", 10), fig("rate", "jobs/s", 1000)}},
		{Insecure: false, Figures: []figure{fig("latency", "ms", 12), fig("rate", "jobs/s", 1100)},
			Failed: map[string]string{"gossip": "no quorum"}},
	}
	dir := t.TempDir()
	var paths []string
	for i, r := range reps {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "pass-"+string(rune('1'+i))+".json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var b bytes.Buffer
	if err := compareFiles(&b, paths); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"pass 1: secure", "load average 1.00 1.00 1.00 -> 1.50 1.10 1.00", "pass 4: secure", "1 suites failed",
		// latency: secure 10 and 12 -> 11; insecure 8 and 10 -> 9; 22% worse.
		"11.0 [10.0-12.0]", "9.00 [8.00-10.0]", "1.22", "OVER BUDGET: 22% worse",
		// rate: secure 900 and 1100 -> 1000, insecure 1000.
		"1000 [900.0-1100]", "ok (not worse)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison has no %q:\n%s", want, out)
		}
	}
	if err := compareFiles(&b, []string{filepath.Join(dir, "missing.json")}); err == nil {
		t.Errorf("compare of a missing file: got no error")
	}
}
