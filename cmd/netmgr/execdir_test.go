package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// attemptDirIn is the exec dir of attempt name (JOB.INSTANCE.ATTEMPT)
// under execDir, in the directory of whichever cluster ran it; it fails
// t unless exactly one exists.
func attemptDirIn(t *testing.T, execDir, name string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(execDir, "*", name))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("exec dir of %s under %s: got %v (%v), want exactly one", name, execDir, dirs, err)
	}
	return dirs[0]
}

// startDevAgent runs `netmgr agent --dev --exec-dir execDir` with the
// extra arguments in this process until the test ends, and points the
// CLI at it (t.Setenv).
func startDevAgent(t *testing.T, execDir string, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		args := append([]string{"netmgr", "agent", "--dev", "--exec-dir", execDir, "--log-level", "warn"}, extra...)
		codeCh <- run(ctx, args, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-codeCh:
		case <-time.After(30 * time.Second):
			t.Error("agent did not stop within 30s of its context ending")
		}
	})
	exportRE := regexp.MustCompile(`(?m)^export NETMGR_ADDR=(https://127\.0\.0\.1:\d+)\nexport NETMGR_SOCKET=(/\S+/stub\.sock)\nexport NETMGR_CACERT=(/\S+/ca\.pem)$`)
	var m []string
	testwait.Until(t, 60*time.Second, "the agent's export lines", func() (bool, string) {
		select {
		case code := <-codeCh:
			t.Fatalf("agent exited with %d before it was ready; stderr:\n%s", code, stderr.String())
		default:
		}
		m = exportRE.FindStringSubmatch(stdout.String())
		return m != nil, "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
	})
	t.Setenv(envAddr, m[1])
	t.Setenv(envSocket, m[2])
	t.Setenv(envCACert, m[3])
	t.Setenv(envToken, "")
}

// TestTwoDevClustersShareExecDir is the collision of issue 16: two
// `netmgr agent --dev` on one exec dir each run their job 1, whose output
// went to the same 1.0.1/stdout. Each must have a directory of its own.
func TestTwoDevClustersShareExecDir(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts two servers and two stubs")
	}
	t.Setenv("TMPDIR", t.TempDir())
	execDir := t.TempDir()
	for _, name := range []string{"cluster-a", "cluster-b"} {
		startDevAgent(t, execDir)
		code, out, errOut := runCLI(t, "netexec", "--wait", "done", "/bin/sh", "-c", "echo "+name)
		if code != exitOK {
			t.Fatalf("netexec on %s: exit code %d\nstdout:\n%s\nstderr:\n%s", name, code, out, errOut)
		}
	}
	dirs, err := filepath.Glob(filepath.Join(execDir, "*", "*.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	slices.Sort(got)
	if want := []string{"cluster-a\n", "cluster-b\n"}; !slices.Equal(got, want) {
		t.Errorf("stdout files %v hold %q, want one per cluster: %q", dirs, got, want)
	}
	if len(dirs) == 2 && filepath.Base(dirs[0]) != filepath.Base(dirs[1]) {
		t.Errorf("the clusters' jobs have different ids (%v): the collision was not tried", dirs)
	}
}

// TestDevClusterRemovesExecDirs runs a job on `netmgr agent --dev` with a
// short --exec-retention: its directory, with its output, exists when
// netexec --wait done returns and is gone after the retention, and
// netstatus -m reports the exec dir's use.
func TestDevClusterRemovesExecDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub")
	}
	t.Setenv("TMPDIR", t.TempDir())
	execDir := t.TempDir()
	startDevAgent(t, execDir, "--exec-retention", "2s")
	code, out, errOut := runCLI(t, "netexec", "--wait", "done", "/bin/sh", "-c", "echo out; echo err >&2; head -c 2097152 /dev/zero >big")
	if code != exitOK {
		t.Fatalf("netexec: exit code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	dir := attemptDirIn(t, execDir, "1.0.1")
	for name, want := range map[string]string{"stdout": "out\n", "stderr": "err\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s right after the job ended = %q, %v; want %q", name, b, err, want)
		}
	}
	testwait.For(t, 30*time.Second, "netstatus -m reporting the exec dir's use", func() bool {
		code, out, _ := runCLI(t, "netstatus", "-m", "--json")
		var rows []struct {
			Used int64 `json:"exec_used_bytes"`
		}
		return code == exitOK && json.Unmarshal([]byte(out), &rows) == nil && len(rows) == 1 && rows[0].Used > 0
	})
	testwait.For(t, 30*time.Second, "the exec dir removed after the retention", func() bool {
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist)
	})
}
