package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// summary describes a sample: its size and order statistics.
type summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// summarize returns the order statistics of xs (nearest-rank percentiles).
func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return summary{
		N:      len(s),
		Min:    s[0],
		Median: percentile(s, 50),
		P90:    percentile(s, 90),
		P99:    percentile(s, 99),
		Max:    s[len(s)-1],
	}
}

// percentile returns the nearest-rank p-th percentile of sorted s.
func percentile(s []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// results is everything one run measured; its JSON form is -json's output.
type results struct {
	CPUs        int    `json:"cpus"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	Servers     int    `json:"servers"`
	Stubs       int    `json:"stubs"`
	Binary      string `json:"binary"`
	Concurrency int    `json:"concurrency"`
	// Sequential is submit->registered latency in ms, one job at a time.
	Sequential summary `json:"sequential_latency_ms"`
	// Loaded is the same latency in ms seen by the concurrent submitters.
	Loaded summary `json:"loaded_latency_ms"`
	// Windows is jobs registered per 1 s window of the throughput phase.
	Windows    summary `json:"throughput_per_window"`
	Jobs       int     `json:"throughput_jobs"`
	Seconds    float64 `json:"throughput_seconds"`
	JobsPerSec float64 `json:"throughput_jobs_per_sec"`
	// SubmitWindows is submits accepted per 1 s window with submitClients
	// clients that do not wait for their jobs; Submitted is their total.
	SubmitWindows []float64 `json:"submit_windows"`
	Submitted     int       `json:"submitted"`
	// Stages is the sequential phase's mean time per stage, from the
	// leader's and the stubs' /metrics.
	Stages    string `json:"stages,omitempty"`
	Errors    int    `json:"errors"`
	LastError string `json:"last_error,omitempty"`
}

// figures returns the latency suite's rows of the table.
func (r *results) figures() []figure {
	tp := fmt.Sprintf("%d jobs of %d instances in %.1f s = %.0f instances/s overall, %d submitters, %d slots per stub",
		r.Jobs, tpInstances, r.Seconds, r.JobsPerSec*tpInstances, r.Concurrency, benchSlots)
	if r.Errors > 0 {
		tp += fmt.Sprintf("; %d errors (last: %s)", r.Errors, r.LastError)
	}
	return []figure{
		{Name: "submit->registered, sequential", Unit: "ms", Sample: r.Sequential, Target: "p50 <= 10, p99 <= 30",
			Note: fmt.Sprintf("%d servers, %d stubs as processes on 127.0.0.1, job %s; %s", r.Servers, r.Stubs, r.Binary, r.Stages)},
		{Name: fmt.Sprintf("submit->all %d registered, %d submitters", tpInstances, r.Concurrency), Unit: "ms", Sample: r.Loaded},
		{Name: "instances registered per 1 s, real forks, 2 stubs", Unit: "inst/s", Sample: r.Windows,
			Target: ">= 500", Note: tp},
		{Name: fmt.Sprintf("submits accepted per 1 s, %d clients", submitClients), Unit: "jobs/s",
			Sample: summarize(r.SubmitWindows), Target: ">= 5000",
			Note: fmt.Sprintf("%d accepted; the stubs are drained, so the jobs queue and only acceptance is measured", r.Submitted)},
	}
}

// report is everything one run of the benchmark measured; its JSON form
// is -json's output.
type report struct {
	CPUs  int    `json:"cpus"`
	OS    string `json:"os"`
	Arch  string `json:"arch"`
	Quick bool   `json:"quick"`
	// Insecure is set when every cluster ran without TLS (-insecure).
	Insecure bool `json:"insecure"`
	// LoadBefore and LoadAfter are /proc/loadavg when the run began and
	// ended: the machine may be shared, and a busy one slows every figure.
	LoadBefore string   `json:"load_before,omitempty"`
	LoadAfter  string   `json:"load_after,omitempty"`
	Figures    []figure `json:"figures"`
	// Failed names the suites that failed, with their errors.
	Failed map[string]string `json:"failed,omitempty"`
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// writeTable prints one table of every figure, medians with spread, then
// the figures' notes and any failed suite.
func (r *report) writeTable(w io.Writer) {
	fmt.Fprintf(w, "netmgr-bench: %d CPU cores (%s/%s), %s", r.CPUs, r.OS, r.Arch, r.mode())
	if r.Quick {
		fmt.Fprint(w, ", BENCH_QUICK")
	}
	fmt.Fprintf(w, "; load average %s at the start, %s at the end\n\n", orNone(r.LoadBefore), orNone(r.LoadAfter))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tn\tmedian\tp90\tp99\tspread (min-max)\ttarget")
	for _, f := range r.Figures {
		s := f.Sample
		if s.N == 0 {
			// Not measured (e.g. a netexec without the variant's flag).
			fmt.Fprintf(tw, "%s\t0\tn/a\t\t\t\t%s\n", f.Name, f.Target)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s-%s %s\t%s\n", f.Name, s.N,
			num(s.Median), num(s.P90), num(s.P99), num(s.Min), num(s.Max), f.Unit, f.Target)
	}
	tw.Flush()
	notes := false
	for _, f := range r.Figures {
		if f.Note == "" {
			continue
		}
		if !notes {
			fmt.Fprintln(w)
			notes = true
		}
		fmt.Fprintf(w, "%s: %s\n", f.Name, f.Note)
	}
	if len(r.Failed) > 0 {
		fmt.Fprintln(w)
		for _, name := range slices.Sorted(maps.Keys(r.Failed)) {
			fmt.Fprintf(w, "suite %s failed: %s\n", name, r.Failed[name])
		}
	}
}

// mode names how the run's clusters ran.
func (r *report) mode() string {
	if r.Insecure {
		return "insecure (--insecure: no TLS, no authentication)"
	}
	return "secure (TLS and authentication on every link)"
}

// loadAverage returns the first three fields of /proc/loadavg, or "" where
// there is none.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// orNone returns s, or "unknown" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// num formats a value with precision fitting its size.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
