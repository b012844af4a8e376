package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one poller.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAgentDev starts `netmgr agent --dev` in this process, runs a job on
// it with netexec --wait done, and checks that stopping the agent removes
// its data directory.
func TestAgentDev(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	execDir := t.TempDir()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- run(ctx, []string{"netmgr", "agent", "--dev", "--exec-dir", execDir, "--log-level", "warn"}, &stdout, &stderr)
	}()

	exportRE := regexp.MustCompile(`(?m)^export NETMGR_ADDR=(http://127\.0\.0\.1:\d+)$`)
	var addr string
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := exportRE.FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case code := <-codeCh:
			t.Fatalf("agent exited with %d before it was ready; stderr:\n%s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent printed no export line within 60s; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}
	t.Setenv(envAddr, addr)

	code, out, errOut := runCLI(t, "netexec", "--name", "devjob", "--wait", "done", "/bin/sh", "-c", "exit 0")
	if code != exitOK {
		t.Fatalf("netexec exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s\nagent stderr:\n%s", code, exitOK, out, errOut, stderr.String())
	}
	if want := "instance 0: exited 0 on " + devStubName + "\n"; !strings.HasSuffix(out, want) {
		t.Errorf("netexec stdout =\n%s\nwant it to end with %q", out, want)
	}
	code, out, errOut = runCLI(t, "netstatus", "-m")
	if code != exitOK || !strings.Contains(out, devStubName) {
		t.Errorf("netstatus -m: exit code %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	cancel()
	select {
	case code := <-codeCh:
		if code != exitOK {
			t.Errorf("agent exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s of its context ending")
	}
	left, err := filepath.Glob(filepath.Join(tmp, "netmgr-dev-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("agent left its data directory behind: %v", left)
	}
	if _, err := os.Stat(execDir); err != nil {
		t.Errorf("exec dir: %v", err)
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Errorf("freePorts(3) = %v: want three distinct positive ports", ports)
		}
		seen[p] = true
	}
}
