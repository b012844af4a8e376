package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// securityBudget is how much slower the secure runs may be than the
// insecure ones, figure by figure (issue 15: within 15%).
const securityBudget = 0.15

// modeFigures is one figure's pass medians, by mode.
type modeFigures struct {
	name, unit       string
	secure, insecure []float64
}

// compareFiles reads the -json reports at paths and writes the
// comparison of their secure and insecure runs to w.
func compareFiles(w io.Writer, paths []string) error {
	var reps []report
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("compare: read %s: %w", p, err)
		}
		reps = append(reps, r)
	}
	writeComparison(w, paths, reps)
	return nil
}

// collect gathers every figure's pass medians by mode, in the order the
// figures first appear.
func collect(reps []report) []*modeFigures {
	var out []*modeFigures
	byName := map[string]*modeFigures{}
	for _, r := range reps {
		for _, f := range r.Figures {
			if f.Sample.N == 0 {
				continue // not measured (e.g. a netexec without the flag)
			}
			mf := byName[f.Name]
			if mf == nil {
				mf = &modeFigures{name: f.Name, unit: f.Unit}
				byName[f.Name] = mf
				out = append(out, mf)
			}
			if r.Insecure {
				mf.insecure = append(mf.insecure, f.Sample.Median)
			} else {
				mf.secure = append(mf.secure, f.Sample.Median)
			}
		}
	}
	return out
}

// writeComparison prints the passes with their load, then one row per
// figure: the median over the passes of each mode's medians, their range,
// the secure/insecure ratio and whether the secure figure is within
// securityBudget of the insecure one (in the figure's worse direction).
func writeComparison(w io.Writer, paths []string, reps []report) {
	fmt.Fprintln(w, "netmgr-bench: secure (TLS, authentication) against insecure (--insecure) runs of one binary")
	for i, r := range reps {
		mode := "secure"
		if r.Insecure {
			mode = "insecure"
		}
		failed := ""
		if len(r.Failed) > 0 {
			failed = fmt.Sprintf(", %d suites failed", len(r.Failed))
		}
		fmt.Fprintf(w, "  pass %d: %-8s %s, load average %s -> %s%s\n", i+1, mode, paths[i], orNone(r.LoadBefore), orNone(r.LoadAfter), failed)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tunit\tsecure median [passes]\tinsecure median [passes]\tsecure/insecure\tverdict")
	for _, mf := range collect(reps) {
		s, i := medianOf(mf.secure), medianOf(mf.insecure)
		ratio, verdict := "-", "-"
		if len(mf.secure) > 0 && len(mf.insecure) > 0 {
			if i != 0 {
				ratio = fmt.Sprintf("%.2f", s/i)
			}
			verdict = judge(s, i, higherIsBetter(mf.unit))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", mf.name, mf.unit, passes(s, mf.secure), passes(i, mf.insecure), ratio, verdict)
	}
	tw.Flush()
}

// higherIsBetter reports whether a figure in unit is a rate.
func higherIsBetter(unit string) bool { return strings.HasSuffix(unit, "/s") }

// judge says whether the secure median s is within securityBudget of the
// insecure median i: "ok", or how much worse it is.
func judge(s, i float64, higher bool) string {
	worse := s - i // how much worse secure is, in the unit
	if higher {
		worse = i - s
	}
	if worse <= 0 {
		return "ok (not worse)"
	}
	if i == 0 {
		return fmt.Sprintf("worse by %s (insecure 0)", num(worse))
	}
	frac := worse / math.Abs(i)
	if frac <= securityBudget {
		return fmt.Sprintf("ok (%.0f%% worse)", 100*frac)
	}
	return fmt.Sprintf("OVER BUDGET: %.0f%% worse", 100*frac)
}

// passes renders a median and the range of the pass medians it came from.
func passes(med float64, xs []float64) string {
	switch len(xs) {
	case 0:
		return "-"
	case 1:
		return num(med)
	}
	return fmt.Sprintf("%s [%s-%s]", num(med), num(slices.Min(xs)), num(slices.Max(xs)))
}

// medianOf returns the median of xs (the mean of the middle two for an
// even count), 0 for none.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
