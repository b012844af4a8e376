package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
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
	Errors     int     `json:"errors"`
	LastError  string  `json:"last_error,omitempty"`
}

func (r *results) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

func (r *results) writeTable(w io.Writer) {
	fmt.Fprintf(w, "netmgr-bench: %d servers, %d stubs on 127.0.0.1, %d CPU cores (%s/%s), job %s\n\n",
		r.Servers, r.Stubs, r.CPUs, r.OS, r.Arch, r.Binary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tn\tmedian\tp90\tp99\tspread (min-max)")
	row := func(name string, s summary, unit string) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f-%.1f %s\n", name, s.N, s.Median, s.P90, s.P99, s.Min, s.Max, unit)
	}
	row("submit->registered, sequential", r.Sequential, "ms")
	row(fmt.Sprintf("submit->registered, %d submitters", r.Concurrency), r.Loaded, "ms")
	row(fmt.Sprintf("jobs registered per 1 s, %d submitters", r.Concurrency), r.Windows, "jobs/s")
	tw.Flush()
	fmt.Fprintf(w, "\nthroughput overall: %d jobs in %.1f s = %.1f jobs/s\n", r.Jobs, r.Seconds, r.JobsPerSec)
	if r.Errors > 0 {
		fmt.Fprintf(w, "errors: %d (last: %s)\n", r.Errors, r.LastError)
	}
}
