package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParseLedger(t *testing.T) {
	data := "start stub1 1 1700000000.5\nend stub1 1 1700000001.000000001\nstart stub2 2 17000"
	got, err := parseLedger(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledgerLine{
		{Kind: "start", Machine: "stub1", Attempt: 1, At: time.Unix(1700000000, 500000000)},
		{Kind: "end", Machine: "stub1", Attempt: 1, At: time.Unix(1700000001, 1)},
	}
	if !slices.EqualFunc(got, want, func(a, b ledgerLine) bool {
		return a.Kind == b.Kind && a.Machine == b.Machine && a.Attempt == b.Attempt && a.At.Equal(b.At)
	}) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"begin stub1 1 1.0\n", "start stub1 x 1.0\n", "start stub1 1 noon\n", "start stub1 1\n"} {
		if _, err := parseLedger(bad); err == nil {
			t.Errorf("parseLedger(%q): got no error", bad)
		}
	}
}

func TestOverlaps(t *testing.T) {
	dead := time.Unix(1000, 0)
	before, after := dead.Add(-time.Millisecond), dead.Add(time.Millisecond)
	tests := []struct {
		name  string
		lines []ledgerLine
		want  int
	}{
		{"clean failover", []ledgerLine{
			{Kind: "start", Machine: "stub1", Attempt: 1, At: dead.Add(-time.Minute)},
			{Kind: "start", Machine: "stub2", Attempt: 2, At: dead.Add(4 * time.Second)},
		}, 0},
		{"new attempt before the kill", []ledgerLine{
			{Kind: "start", Machine: "stub1", Attempt: 1, At: dead.Add(-time.Minute)},
			{Kind: "start", Machine: "stub2", Attempt: 2, At: before},
		}, 1},
		{"old attempt alive after the kill", []ledgerLine{
			{Kind: "start", Machine: "stub1", Attempt: 1, At: dead.Add(-time.Minute)},
			{Kind: "end", Machine: "stub1", Attempt: 1, At: after},
			{Kind: "start", Machine: "stub2", Attempt: 2, At: dead.Add(4 * time.Second)},
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := overlaps(tt.lines, 1, dead); len(got) != tt.want {
				t.Errorf("got overlaps %+v, want %d", got, tt.want)
			}
		})
	}
}

// The job script writes what parseLedger reads: a start line, and an end
// line on SIGTERM.
func TestLedgerScript(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger")
	cmd := exec.Command("/bin/sh", "-c", ledgerScript, "failover", ledger)
	cmd.Env = append(os.Environ(), "NETMGR_MACHINE=stub9", "NETMGR_ATTEMPT=3")
	// Its own process group, so that the cleanup reaches its sleep too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	err := waitFor(t.Context(), 10*time.Millisecond, 10*time.Second, func(context.Context) bool {
		lines, _ := readLedger(ledger)
		_, ok := findStart(lines, 3)
		return ok
	})
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-exited
	if waitErr != nil {
		t.Fatalf("the script ended with %v after SIGTERM, want exit 0", waitErr)
	}
	lines, err := readLedger(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Kind != "start" || lines[1].Kind != "end" ||
		lines[1].Machine != "stub9" || lines[1].Attempt != 3 || lines[1].At.Before(lines[0].At) {
		t.Errorf("got ledger %+v, want a start and a later end of stub9 attempt 3", lines)
	}
}
