package main

import (
	"context"
	"slices"
	"strings"
)

// figure is one row of the table `make bench` prints: one measured
// quantity, its sample's order statistics and the target it is held to.
type figure struct {
	// Name says what was measured, e.g. "submit->registered, sequential".
	Name string `json:"name"`
	// Unit is the unit of the sample's values: "ms", "s", "jobs/s", "MiB".
	Unit string `json:"unit"`
	// Sample holds the measurements' order statistics; a single
	// measurement is a sample of one.
	Sample summary `json:"sample"`
	// Target is the goal the figure is held to, e.g. "p50 <= 10 ms", or
	// "" when there is none.
	Target string `json:"target,omitempty"`
	// Note is a short remark printed under the table, e.g. the setup.
	Note string `json:"note,omitempty"`
}

// suite is one independent part of the benchmark. Each starts what it
// needs (a process cluster, simulated stubs, an in-memory state) and stops
// it before it returns.
type suite struct {
	// name selects the suite with -only; lower case, no spaces.
	name string
	// optIn keeps the suite out of a run that does not name it in -only.
	optIn bool
	// run measures and returns the suite's figures.
	run func(ctx context.Context, cfg config) ([]figure, error)
}

// suites is every suite of the benchmark, in the order they run and
// their figures print; each comment names the suite's file.
var suites = []suite{
	{name: "latency", run: latencySuite},                    // bench.go
	{name: "clisubmit", run: cliSubmitSuite},                // clisubmit.go
	{name: "alloc", run: allocSuite},                        // alloc.go
	{name: "startcpu", optIn: true, run: startCPUSuite},     // startcpu.go
	{name: "flood", run: floodSuite},                        // flood.go
	{name: "chain", run: chainSuite},                        // chain.go
	{name: "files", run: filesSuite},                        // files.go
	{name: "checkpoint", optIn: true, run: checkpointSuite}, // checkpoint.go
	{name: "interactive", run: interactiveSuite},            // interactive.go
	{name: "owner", run: ownerSuite},                        // owner.go
	{name: "idle", run: idleSuite},                          // idle.go
	{name: "failover", run: failoverSuite},                  // failover.go
	{name: "simstubs", run: simStubsSuite},                  // simstubs.go
	{name: "outage", run: outageSuite},                      // outage.go
	{name: "gossip", run: gossipSuite},                      // gossip.go
	{name: "pass", run: passSuite},                          // pass.go
	{name: "resources", run: resourcesSuite},                // resources.go
	{name: "policy", run: policySuite},                      // policy.go
	{name: "scale", run: scaleSuite},                        // scale.go
	{name: "retention", run: retentionSuite},                // retention.go
	{name: "ui", run: uiSuite},                              // ui.go
}

// selectSuites returns the suites named in only, a comma-separated list,
// or when only is empty all of them but the opt-in ones.
func selectSuites(only string) []suite {
	if only == "" {
		var out []suite
		for _, s := range suites {
			if !s.optIn {
				out = append(out, s)
			}
		}
		return out
	}
	want := strings.Split(only, ",")
	var out []suite
	for _, s := range suites {
		if slices.Contains(want, s.name) {
			out = append(out, s)
		}
	}
	return out
}

// sample returns the summary of a single measurement.
func sample(v float64) summary { return summarize([]float64{v}) }
