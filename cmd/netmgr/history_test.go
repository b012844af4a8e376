package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func sampleHistory() []client.HistoryAttempt {
	return []client.HistoryAttempt{
		{Index: 40, Job: 12, Name: "job1", Owner: "alice", Instance: 0, Attempt: 1, Machine: "stub1", State: "failed", ExitCode: 3,
			UserMS: 2050, SysMS: 70, MaxRSSKB: 12 * 1024, PlacedAt: t0, StartedAt: t0.Add(time.Second),
			EndedAt: t0.Add(4 * time.Second), ReplacedBy: 2, CheckpointSize: 3 << 20, CheckpointAt: t0.Add(4 * time.Second)},
		{Index: 44, Job: 12, Name: "job1", Owner: "alice", Instance: 0, Attempt: 2, Machine: "stub2", State: "exited",
			UserMS: 1000, MaxRSSKB: 3 << 20, StartedAt: t0.Add(6 * time.Second), EndedAt: t0.Add(96 * time.Second)},
		{Index: 50, Job: 13, Name: "job1", Owner: "bob", Queue: "long", Instance: 1, Attempt: 1, Machine: "stub3", State: "killed",
			Signal: "SIGKILL", Reason: "memory limit 512M exceeded", StartedAt: t0, EndedAt: t0.Add(time.Hour)},
		{Index: 51, Job: 14, Owner: "bob", Instance: 0, Attempt: 1, State: "cancelled",
			Error: "dependency job 13 failed", EndedAt: t0.Add(time.Hour)},
	}
}

func TestRenderHistory(t *testing.T) {
	var b bytes.Buffer
	if err := renderHistory(&b, sampleHistory(), time.UTC); err != nil {
		t.Fatal(err)
	}
	golden(t, "history.golden", b.Bytes())
	b.Reset()
	if err := renderHistory(&b, nil, time.UTC); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != 1 {
		t.Errorf("empty history printed %d lines, want the header only:\n%s", got, b.String())
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"2026-11-27T10:00:00Z", time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)},
		{"2026-11-20", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)},
		{"24h", now.Add(-24 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
	}
	for _, tt := range tests {
		got, err := parseSince("since", tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"yesterday", "-5h", "2026-13-01"} {
		if _, err := parseSince("since", bad, now); err == nil || !strings.Contains(err.Error(), "--since: ") {
			t.Errorf("parseSince(%q): err = %v, want one naming --since", bad, err)
		}
	}
}

func TestHistoryUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"two arguments", []string{"netmgr", "history", "12", "13"}, `netmgr history: unexpected argument "13"`},
		{"job and --job", []string{"netmgr", "history", "--job", "12", "backup"}, "netmgr history: give --job ID or JOB|ID, not both"},
		{"option after --", []string{"netmgr", "history", "--", "--json"}, `netmgr history: options go before JOB|ID, got "--json" after it`},
		{"empty name", []string{"netmgr", "history", ""}, "netmgr history: JOB|ID is empty"},
		{"bad state", []string{"netmgr", "history", "--state", "running"}, `netmgr history: --state: "running" is not an end state (exited, failed, signaled, killed, lost, cancelled)`},
		{"bad since", []string{"netmgr", "history", "--since", "soon"}, `netmgr history: --since: "soon" is not a time`},
		{"bad until", []string{"netmgr", "history", "--until", "later"}, `netmgr history: --until: "later" is not a time`},
		{"since after until", []string{"netmgr", "history", "--since", "2026-11-27", "--until", "2026-11-26"}, "netmgr history: --since 2026-11-27 is not before --until 2026-11-26"},
		{"events bad since", []string{"netmgr", "events", "--since", "soon"}, `netmgr events: --since: "soon" is not a time`},
		{"server negative history retention", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--history-retention", "-1h"},
			"netmgr server: --history-retention must not be negative, got -1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envAddr, "http://127.0.0.1:1")
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.HasPrefix(stderr, tt.want) {
				t.Errorf("stderr =\n%s\nwant prefix\n%s", stderr, tt.want)
			}
		})
	}
}

// TestHistoryJob selects a job by id (sent to the servers, as --job) or by
// name or name.owner (kept from the answer), the option after it or not.
func TestHistoryJob(t *testing.T) {
	f := &fakeServer{history: sampleHistory()}
	t.Setenv(envAddr, f.start(t))
	tests := []struct {
		name  string
		args  []string
		query string
		jobs  string // the JOB column of the rows printed
	}{
		{"name", []string{"netmgr", "history", "job1"}, "", "12 12 13"},
		{"name.owner", []string{"netmgr", "history", "job1.bob"}, "", "13"},
		{"no such name", []string{"netmgr", "history", "nightly"}, "", ""},
		{"id", []string{"netmgr", "history", "12"}, "job=12", "12 12 13 14"}, // the fake answers everything
		{"option after the name", []string{"netmgr", "history", "job1.alice", "--state", "exited"}, "state=exited", "12 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.historyQueries = nil
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			if len(f.historyQueries) != 1 || f.historyQueries[0] != tt.query {
				t.Errorf("queries = %q, want [%q]", f.historyQueries, tt.query)
			}
			var jobs []string
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
				jobs = append(jobs, strings.Fields(line)[0])
			}
			if got := strings.Join(jobs, " "); got != tt.jobs {
				t.Errorf("rows of jobs %q, want %q; stdout:\n%s", got, tt.jobs, stdout)
			}
		})
	}
}
