package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"
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

// startDevAgent runs `netmgr agent --dev --exec-dir execDir` in this
// process until the test ends, and returns its export values: address,
// socket and CA file.
func startDevAgent(t *testing.T, execDir string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- run(ctx, []string{"netmgr", "agent", "--dev", "--exec-dir", execDir, "--log-level", "warn"}, &stdout, &stderr)
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := exportRE.FindStringSubmatch(stdout.String()); m != nil {
			return m[1:]
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
		exports := startDevAgent(t, execDir)
		t.Setenv(envAddr, exports[0])
		t.Setenv(envSocket, exports[1])
		t.Setenv(envCACert, exports[2])
		t.Setenv(envToken, "")
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
