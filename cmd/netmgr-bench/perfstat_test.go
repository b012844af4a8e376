package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// perf stat's -x, file gives a value per event; an event that did not
// run counts 0, one the machine cannot count is left out.
func TestReadPerf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.out")
	text := "# started on Sat Nov 28 01:50:47 2026\n\n" +
		"12.50,msec,task-clock,12500000,100.00,0.002,CPUs utilized\n" +
		"<not counted>,,context-switches,0,100.00,,\n" +
		"<not supported>,,instructions:u,0,100.00,,\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{"stub task-clock": 1}
	if err := readPerf(path, "stub", got); err != nil {
		t.Fatalf("readPerf: %v", err)
	}
	want := map[string]float64{"stub task-clock": 13.5, "stub context-switches": 0}
	if len(got) != len(want) {
		t.Errorf("readPerf = %v, want %v", got, want)
	}
	for k, x := range want {
		if got[k] != x {
			t.Errorf("readPerf %s = %v, want %v", k, got[k], x)
		}
	}
	if err := os.WriteFile(path, []byte("<not supported>,,instructions:u,0,100.00,,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := readPerf(path, "stub", map[string]float64{}); err == nil {
		t.Error("readPerf of a file without a counter: no error")
	}
}

// The idle cluster's counts come off in proportion to the window's length.
func TestPerfCountsLess(t *testing.T) {
	p := perfCounts{values: map[string]float64{"server task-clock": 50}, elapsed: 2 * time.Second}
	p.less(perfCounts{values: map[string]float64{"server task-clock": 10}, elapsed: time.Second})
	if got := p.values["server task-clock"]; got != 30 {
		t.Errorf("after less: %v, want 30", got)
	}
}
