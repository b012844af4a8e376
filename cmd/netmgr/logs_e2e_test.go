package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// logsSubmit runs netexec with args and returns the id of the job it
// submitted.
func logsSubmit(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"netexec"}, args...)...)
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("netexec %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return m[1]
}

// TestLogsFollowsARunningJob runs `netmgr logs -f` as a process of its own,
// through the dev agent's stub socket, on a job that prints a line and
// then waits for the test to have seen it before it prints the next: each
// line reaches the test while the job runs, and logs -f exits 0 when the
// job ends. The finished job's stdout and stderr, and another instance's,
// are read too.
func TestLogsFollowsARunningJob(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub, and runs the netmgr binary")
	}
	bin := netmgrBinary(t)
	t.Setenv("TMPDIR", t.TempDir())
	startDevAgent(t, t.TempDir())
	dir := t.TempDir()
	script := `for i in 1 2 3; do echo line$i; while [ ! -e ` + dir + `/go$i ]; do sleep 0.02; done; done; echo bye >&2`
	id := logsSubmit(t, "/bin/sh", "-c", script)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "logs", "-f", id)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	for i := 1; i <= 3; i++ {
		line, err := rd.ReadString('\n')
		if want := "line" + strconv.Itoa(i) + "\n"; err != nil || line != want {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("logs -f line %d = %q, %v; want %q (the job waits for the test before it writes more); stderr:\n%s", i, line, err, want, stderr.String())
		}
		if err := os.WriteFile(filepath.Join(dir, "go"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rest, _ := bufio.NewReader(rd).ReadString(0)
	if err := cmd.Wait(); err != nil || rest != "" {
		t.Fatalf("logs -f after the job ended: %v, more output %q; want exit 0 and nothing more; stderr:\n%s", err, rest, stderr.String())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"netmgr", "logs", id}, "line1\nline2\nline3\n"},
		{[]string{"netmgr", "logs", "--stderr", id}, "bye\n"},
	} {
		if code, out, errOut := runCLI(t, tc.args...); code != exitOK || out != tc.want {
			t.Errorf("%s: exit %d, %q (stderr %q); want 0, %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}

	two := logsSubmit(t, "--wait", "done", "-n", "2", "/bin/sh", "-c", "echo instance $NETMGR_INSTANCE")
	if code, out, errOut := runCLI(t, "netmgr", "logs", "--instance", "1", two); code != exitOK || out != "instance 1\n" {
		t.Errorf("logs --instance 1: exit %d, %q (stderr %q); want 0, %q", code, out, errOut, "instance 1\n")
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"netmgr", "logs", "--instance", "2", two}, exitError, "netmgr logs: logs of job " + two + ": job " + two + " has no instance 2 (it has 2, numbered from 0)"},
		{[]string{"netmgr", "logs", "4242"}, exitError, "netmgr logs: logs of job 4242: "},
		{[]string{"netmgr", "logs"}, exitUsage, "missing JOB or ID"},
		{[]string{"netmgr", "logs", two, "--", "--stderr"}, exitUsage, `options go before JOB|ID, got "--stderr" after it`},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.want)
		}
	}
}

// TestLogsRefusedAndRemoved: a user who does not own the job is refused
// with a message that says whose it is, and a job whose exec dir the
// stub removed after --exec-retention gets an error that says so.
func TestLogsRefusedAndRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub")
	}
	t.Setenv("TMPDIR", t.TempDir())
	startDevAgent(t, t.TempDir(), "--exec-retention", "2s")
	id := logsSubmit(t, "--wait", "done", "/bin/sh", "-c", "echo mine")
	code, out, errOut := runCLI(t, "netmgr", "token", "create", "--user", "mallory", "-q")
	if code != exitOK {
		t.Fatalf("token create: exit %d, stderr:\n%s", code, errOut)
	}
	if code, out, errOut := runCLI(t, "netmgr", "logs", id); code != exitOK || out != "mine\n" {
		t.Errorf("logs as the owner: exit %d, %q (stderr %q); want 0, %q", code, out, errOut, "mine\n")
	}

	// Mallory comes with her token, straight to the server.
	socket := os.Getenv(envSocket)
	t.Setenv(envSocket, "")
	t.Setenv(envToken, strings.TrimSpace(out))
	code, _, errOut = runCLI(t, "netmgr", "logs", id)
	if want := "only its owner or an admin_id may read the output of it, and you are mallory"; code != exitError || !strings.Contains(errOut, want) || !strings.Contains(errOut, "403") && !strings.Contains(errOut, "permission denied") {
		t.Errorf("logs as mallory: exit %d, stderr %q; want a refusal saying %q", code, errOut, want)
	}
	t.Setenv(envToken, "")
	t.Setenv(envSocket, socket)

	testwait.For(t, 30*time.Second, "logs failing once the retention passed", func() bool {
		code, _, errOut = runCLI(t, "netmgr", "logs", id)
		return code != exitOK
	})
	if want := "removed after the exec retention"; code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("logs after the retention: exit %d, stderr %q; want an error saying %q", code, errOut, want)
	}
}
