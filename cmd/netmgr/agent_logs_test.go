package main

import (
	"context"
	"encoding/json"

	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// TestAgentDevLogsQuiet runs `netmgr agent --dev` as a process, waits for
// its export lines, stops it with SIGTERM and checks that its whole log,
// Raft's and memberlist's lines included, is in one format and has no
// WARN or ERROR line: a normal start and a clean shutdown are news, not
// trouble.
func TestAgentDevLogsQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub")
	}
	bin := netmgrBinary(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			stderr := runDevAgentUntilReady(t, bin, "--log-format", format)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) < 3 {
				t.Fatalf("agent logged %d lines, want its start and stop:\n%s", len(lines), stderr)
			}
			for _, line := range lines {
				level := lineLevel(t, format, line)
				switch {
				case level != "WARN" && level != "ERROR":
				case starvedProbe(line):
					t.Logf("the machine is too loaded for a normal run (a UDP probe over loopback timed out): %s", line)
				default:
					t.Errorf("agent logged at %s: %s", level, line)
				}
			}
			for _, want := range []string{"starting election", "shutting down the dev agent", "stub stopped"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("agent log lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// starvedProbe reports whether line is memberlist's warning that a UDP
// probe timed out where TCP got through. Over loopback that only happens
// when the test's processes get no CPU for the probe timeout (500 ms), as
// on a shared 2-core machine under load: a true warning about an abnormal
// run, not a level that lies, so the test notes it and goes on.
func starvedProbe(line string) bool {
	return strings.Contains(line, "memberlist") && strings.Contains(line, "over TCP but UDP probes failed")
}

// lineLevel returns the level of one log line in format, failing the test
// when the line is not in that format.
func lineLevel(t *testing.T, format, line string) string {
	t.Helper()
	if format == "json" {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON log line: %q", line)
			return ""
		}
		level, _ := rec["level"].(string)
		return level
	}
	if !strings.HasPrefix(line, "time=") {
		t.Errorf("not a text log line (time=... level=... msg=...): %q", line)
		return ""
	}
	_, rest, ok := strings.Cut(line, " level=")
	if !ok {
		t.Errorf("log line without a level: %q", line)
		return ""
	}
	level, _, _ := strings.Cut(rest, " ")
	return level
}

// runDevAgentUntilReady starts the dev agent with args, waits until it has
// printed its export lines, sends SIGTERM, waits for it to exit 0 and
// returns its stderr.
func runDevAgentUntilReady(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// An exec dir every user's jobs reach: a 0700 one is warned of.
	execDir := t.TempDir()
	openToEveryone(t, execDir)
	cmd := exec.CommandContext(ctx, bin, append([]string{"agent", "--dev", "--exec-dir", execDir}, args...)...)
	tmp := t.TempDir()
	cmd.Env = append(cleanEnv(tmp), "TMPDIR="+tmp)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if !testwait.Poll(time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("agent exited before it was ready: %v\nstderr:\n%s", err, stderr.String())
		default:
		}
		return strings.Contains(stdout.String(), "export "+envCACert+"=")
	}) {
		_ = cmd.Process.Kill()
		t.Fatalf("agent printed no export lines within a minute; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agent exit after SIGTERM: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("agent still running a minute after SIGTERM; stderr:\n%s", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "netmgr-dev-*")); len(left) != 0 {
		t.Errorf("agent left %v behind", left)
	}
	return stderr.String()
}

func TestLogFormatUsage(t *testing.T) {
	code, _, stderr := runCLI(t, "netmgr", "agent", "--dev", "--log-format", "xml")
	if code != exitUsage || !strings.Contains(stderr, "--log-format must be text or json") {
		t.Errorf("exit %d, stderr %q; want %d and the formats", code, stderr, exitUsage)
	}
}
