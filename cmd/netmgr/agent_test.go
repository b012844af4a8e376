package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
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
	// Build the binary the other-user subtest runs before TMPDIR points
	// into this test's directory, which is gone when it ends.
	bin := netmgrBinary(t)
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
	t.Run("another local user", func(t *testing.T) { devAgentOtherUser(t, bin, execDir, m[1:]) })

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

// devAgentOtherUser runs netexec as a new local user with the dev agent's
// export lines (exports: address, socket, CA) and checks that the job ran
// as that user.
func devAgentOtherUser(t *testing.T, bin, execDir string, exports []string) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a user and run a command as them")
	}
	u := newOSUser(t, "nmdev")
	// The test's temporary directories are 0700, TMPDIR among them: let
	// the user reach the binary and the exec dir.
	for _, d := range []string{execDir, filepath.Dir(bin)} {
		for ; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatalf("open %s to every user: %v", d, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--wait", "done", "/bin/sh", "-c", "id -u > uid")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + u.home, "USER=" + u.name,
		envAddr + "=" + exports[0], envSocket + "=" + exports[1], envCACert + "=" + exports[2]}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("netexec as %s: %v\n%s", u.name, err, out)
	}
	idRE := regexp.MustCompile(`id (\d+) submitted`)
	mm := idRE.FindSubmatch(out)
	if mm == nil {
		t.Fatalf("netexec as %s printed no job id:\n%s", u.name, out)
	}
	data, err := os.ReadFile(filepath.Join(attemptDirIn(t, execDir, string(mm[1])+".0.1"), "uid"))
	if err != nil {
		t.Fatalf("the job's uid file: %v", err)
	}
	if got := strings.TrimSpace(string(data)); got != strconv.Itoa(u.uid) {
		t.Fatalf("job submitted by %s ran as uid %s, want %d", u.name, got, u.uid)
	}
}
