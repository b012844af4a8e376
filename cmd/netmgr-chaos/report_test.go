package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestReportResultLine(t *testing.T) {
	r := report{
		Seed: 42, Jobs: 10, Start: 100,
		Injected: []injected{
			{Fault: fault{Kind: faultPartitionStub}, Targets: []node{{Name: "stub3"}}, From: 110, To: 125},
			{Fault: fault{Kind: faultKillLeader}, Err: errTest},
		},
		Violations: []violation{
			{Kind: vDoubled, Job: 3, Instance: 0, At: 120, Detail: "attempts 1 and 2 overlap"},
			{Kind: vDoubled, Job: 3, Instance: 0, At: 121, Detail: "attempt 2 started twice"},
			{Kind: vLost, Job: 4, Instance: -1, Detail: "missing"},
			{Kind: vDiverged, Instance: -1, Detail: "server s2 is at index 7"},
			{Kind: vOrphan, Instance: -1, Detail: "stub1: pid 20"},
		},
	}
	var buf bytes.Buffer
	r.write(&buf)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if got, want := lines[len(lines)-1], "chaos: seed 42, 1 faults, 10 jobs (0 in dependency chains), 0 cron firings (0 run, 0 skipped), 1 lost, 1 doubled, 1 diverged, 0 out of dependency order, 0 cron firings missed or doubled, 0 work lost"; got != want {
		t.Errorf("got last line %q, want %q", got, want)
	}
	if !strings.Contains(buf.String(), "faults: partition-stub stub3 (+10.0s..+25.0s)") {
		t.Errorf("got %q, want the overlap placed next to the partition", buf.String())
	}
	if !r.failed() {
		t.Errorf("got failed() false, want true")
	}
}

var errTest = errorString("no leader")

type errorString string

func (e errorString) Error() string { return string(e) }
