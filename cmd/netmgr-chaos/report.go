package main

import (
	"fmt"
	"io"
	"strings"
)

// nearWindow is how long after a fault is healed a violation is still
// shown next to it: the system reacts to a fault for a while after it.
const nearWindow = 30.0

// report is the suite's verdict.
type report struct {
	Seed       int64
	Jobs       int // acknowledged submits
	Injected   []injected
	Violations []violation
	Notes      []string
	Start      float64 // ledger clock when the workload started
}

// faults counts the faults actually injected.
func (r report) faults() int {
	n := 0
	for _, in := range r.Injected {
		if in.Err == nil {
			n++
		}
	}
	return n
}

// counts returns the instances lost and doubled (a whole-job violation
// counts once) and the servers diverged.
func (r report) counts() (lost, doubled, diverged int) {
	seen := map[string]bool{}
	for _, v := range r.Violations {
		key := fmt.Sprintf("%s/%d/%d", v.Kind, v.Job, v.Instance)
		if v.Job != 0 && seen[key] {
			continue
		}
		seen[key] = true
		switch v.Kind {
		case vLost:
			lost++
		case vDoubled:
			doubled++
		case vDiverged:
			diverged++
		}
	}
	return lost, doubled, diverged
}

// failed reports whether any rule was broken.
func (r report) failed() bool { return len(r.Violations) > 0 }

// near lists the faults in force at ledger time t or healed shortly before.
func (r report) near(t float64) string {
	var out []string
	for _, in := range r.Injected {
		if in.Err == nil && t >= in.From-1 && t <= in.To+nearWindow {
			out = append(out, fmt.Sprintf("%s %s (+%.1fs..+%.1fs)", in.Fault.Kind, names(in.Targets), in.From-r.Start, in.To-r.Start))
		}
	}
	if len(out) == 0 {
		return "no fault nearby"
	}
	return strings.Join(out, "; ")
}

// write prints the notes, the violations with the faults around each, a
// count per kind and the result line, last.
func (r report) write(w io.Writer) {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "chaos: note: %s\n", n)
	}
	byKind := map[string]int{}
	for _, v := range r.Violations {
		byKind[v.Kind]++
		fmt.Fprintf(w, "chaos: VIOLATION %s\n", v)
		if v.At > 0 {
			fmt.Fprintf(w, "chaos:     at +%.1fs; faults: %s\n", v.At-r.Start, r.near(v.At))
		}
	}
	if r.failed() {
		var parts []string
		for _, k := range []string{vLost, vDoubled, vDiverged, vOrphan, vLedger, vCheck} {
			if byKind[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", byKind[k], k))
			}
		}
		fmt.Fprintf(w, "chaos: FAIL: %d violations (%s)\n", len(r.Violations), strings.Join(parts, ", "))
	} else {
		fmt.Fprintln(w, "chaos: PASS: no rule broken")
	}
	l, d, x := r.counts()
	fmt.Fprintf(w, "chaos: seed %d, %d faults, %d jobs, %d lost, %d doubled, %d diverged\n", r.Seed, r.faults(), r.Jobs, l, d, x)
}
