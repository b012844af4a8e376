package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// A run's wall time splits at its job's stamps: the submit, the last
// placement and the last Start a stub took.
func TestJobParts(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	job := client.Job{SubmittedAt: at(10), Instances: []client.Instance{
		{PlacedAt: at(10), StartedAt: at(14)},
		{PlacedAt: at(12), StartedAt: at(20)},
	}}
	got := jobParts(start, at(31), job)
	want := allocParts{submit: 10, place: 2, fork: 8, seen: 11}
	if got.submit != want.submit || got.place != want.place || got.fork != want.fork || got.seen != want.seen {
		t.Errorf("jobParts = %+v, want %+v", got, want)
	}
	if d := describeParts([]allocParts{got}, 2); !strings.Contains(d, "N=2: CLI start to submit stamped 10.0 ms") {
		t.Errorf("describeParts = %q", d)
	}
}

// netexec's answer names the job's id.
func TestSubmittedID(t *testing.T) {
	m := submittedID.FindStringSubmatch("job job7.alice id 7 submitted\ninstance 0: running on stub1 pid 42\n")
	if m == nil || m[1] != "7" {
		t.Errorf("submittedID found %q, want 7", m)
	}
}

// A figure that was not measured (a netexec without the variant's flag)
// shows n/a, not zeros.
func TestWriteTableNotMeasured(t *testing.T) {
	rep := &report{CPUs: 2, OS: "linux", Arch: "amd64", Figures: []figure{
		{Name: "allocate N machines, gang", Unit: "ms", Note: "not measured: this netexec has no --gang"},
	}}
	var b bytes.Buffer
	rep.writeTable(&b)
	if !strings.Contains(b.String(), "n/a") || strings.Contains(b.String(), "0.00-0.00") {
		t.Errorf("table:\n%s", b.String())
	}
}

// The variants run /bin/true unless they name a job.
func TestAllocVariantCommand(t *testing.T) {
	if got := (allocVariant{}).command(); len(got) != 1 || !strings.HasSuffix(got[0], "/true") {
		t.Errorf("default command %q, want true", got)
	}
	if got := (allocVariant{job: []string{"/bin/sleep", "1"}}).command(); strings.Join(got, " ") != "/bin/sleep 1" {
		t.Errorf("command %q, want /bin/sleep 1", got)
	}
}
