package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want summary
	}{
		{"empty", nil, summary{}},
		{"one", []float64{7}, summary{N: 1, Min: 7, Median: 7, P90: 7, P99: 7, Max: 7}},
		{"unsorted ten", []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5},
			summary{N: 10, Min: 1, Median: 5, P90: 9, P99: 10, Max: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.in); got != tt.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	r := &results{CPUs: 4, Servers: 3, Stubs: 2, Concurrency: 32, Binary: "/bin/true",
		Sequential: summary{N: 3, Min: 1, Median: 2, P90: 3, P99: 3, Max: 3}}
	rep := &report{CPUs: 4, OS: "linux", Arch: "amd64", Figures: r.figures(),
		Failed: map[string]string{"gossip": "no quorum"}}
	var b bytes.Buffer
	rep.writeTable(&b)
	for _, want := range []string{"4 CPU cores", "figure", "median", "p99", "target",
		"submit->registered, sequential", "1.00-3.00 ms", "p50 <= 10", "3 servers, 2 stubs",
		"suite gossip failed: no quorum"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table has no %q:\n%s", want, b.String())
		}
	}
}
