package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// nearWindow is how long after a fault is healed a violation is still
// shown next to it: the system reacts to a fault for a while after it.
const nearWindow = 30.0

// report is the suite's verdict.
type report struct {
	Seed       int64
	Jobs       int // acknowledged submits
	Chained    int // of those, the jobs of dependency chains
	Cron       cronSummary
	Injected   []injected
	Violations []violation
	Notes      []string
	Start      float64 // ledger clock when the workload started
	Stops      []stop  // stopped attempts of restartable jobs, charged to faults
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

// kind returns how many violations of kind the report holds.
func (r report) kind(kind string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Kind == kind {
			n++
		}
	}
	return n
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

// maxStopLines bounds the stops of one cause the report lists one by one.
const maxStopLines = 20

// writeStops prints how many attempts of restartable jobs were stopped and
// by what, the work lost per whole-control-plane fault, and each stop not
// charged to its own machine (up to maxStopLines per cause).
func (r report) writeStops(w io.Writer) {
	byCause := map[string]int{}
	for _, s := range r.Stops {
		byCause[s.Cause]++
	}
	fmt.Fprintf(w, "chaos: stops: %d attempts of restartable jobs stopped before their end: %d by whole-control-plane faults (work lost), %d by a fault of their own machine, %d during other faults, %d with no fault in force\n",
		len(r.Stops), byCause[causeControlPlane], byCause[causeOwnMachine], byCause[causeOtherFault], byCause[causeNoFault])
	var perFault []string
	for i := range r.Injected {
		in := &r.Injected[i]
		if in.Err != nil || !slices.Contains(controlPlaneFaults, in.Fault.Kind) {
			continue
		}
		n := 0
		for _, s := range r.Stops {
			if s.Cause == causeControlPlane && s.Fault == in {
				n++
			}
		}
		perFault = append(perFault, fmt.Sprintf("%s: %d", describeFault(*in, r.Start), n))
	}
	if len(perFault) > 0 {
		fmt.Fprintf(w, "chaos: work lost by fault: %s\n", strings.Join(perFault, "; "))
	}
	for _, cause := range []string{causeControlPlane, causeOtherFault, causeNoFault} {
		label := map[string]string{causeControlPlane: "work lost", causeOtherFault: "stopped during another fault", causeNoFault: "stopped with no fault in force"}[cause]
		shown := 0
		for _, s := range r.Stops {
			if s.Cause != cause {
				continue
			}
			if shown == maxStopLines {
				fmt.Fprintf(w, "chaos: %s: ... and %d more\n", label, byCause[cause]-shown)
				break
			}
			fmt.Fprintf(w, "chaos: %s: %s\n", label, s.String(r.Start))
			shown++
		}
	}
}

// write prints the notes, the stops, the violations with the faults
// around each, a count per kind and the result line, last.
func (r report) write(w io.Writer) {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "chaos: note: %s\n", n)
	}
	r.writeStops(w)
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
		for _, k := range []string{vLost, vDoubled, vDiverged, vDependency, vCron, vWorkLost, vOrphan, vLedger, vCheck} {
			if byKind[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", byKind[k], k))
			}
		}
		fmt.Fprintf(w, "chaos: FAIL: %d violations (%s)\n", len(r.Violations), strings.Join(parts, ", "))
	} else {
		fmt.Fprintln(w, "chaos: PASS: no rule broken")
	}
	l, d, x := r.counts()
	fmt.Fprintf(w, "chaos: seed %d, %d faults, %d jobs (%d in dependency chains), %d cron firings (%d run, %d skipped), %d lost, %d doubled, %d diverged, %d out of dependency order, %d cron firings missed or doubled, %d work lost\n",
		r.Seed, r.faults(), r.Jobs, r.Chained, r.Cron.Decided, r.Cron.Runs, r.Cron.Skipped, l, d, x, r.kind(vDependency), r.kind(vCron), workLost(r.Stops))
}
