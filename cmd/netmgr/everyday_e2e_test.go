package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// TestE2EEverydayExec runs netexec, netkill and netstatus against one
// server and two stub processes for issue 20's points 4 to 7: a job's
// environment (HOME, USER, LOGNAME, SHELL of its account, --export,
// --chdir, a relative binary and arguments resolved at submit, a missing
// one refused); a job no machine can run flagged at submit and queued, or
// refused with --no-queue; names of the automatic form refused, an
// ambiguous name an error listing its jobs and netkill --all killing
// them; --wait started reporting progress after a second and each
// instance's start, not its later state.
func TestE2EEverydayExec(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 3 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netstatus", "netkill")
	work := filepath.Join(dir, "work")
	for _, d := range []string{work, filepath.Join(work, "data")} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	c, cl := procCluster(t, dir, 1, 2)
	r := &e2eRunner{links: links, env: c.Env(), dir: work}

	t.Run("environment", func(t *testing.T) { testJobEnvironment(t, r, work) })
	t.Run("unrunnable", func(t *testing.T) { testUnrunnable(t, r, cl) })
	t.Run("names", func(t *testing.T) { testNames(t, r, cl, work) })
	t.Run("wait started", func(t *testing.T) { testWaitStarted(t, r, cl, work) })
}

// testJobEnvironment runs ./env.sh, relative to the submitter's directory,
// from --chdir data with relative path arguments, and reads what the job
// saw.
func testJobEnvironment(t *testing.T, r *e2eRunner, work string) {
	script := "#!/bin/sh\npwd > \"$1\"\nenv > \"$2\"\n"
	if err := os.WriteFile(filepath.Join(work, "env.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	shell := passwdShell(t, me.Username)
	env := []string{"LANG=C.UTF-8", "FOO=bar"}

	r.runEnv(t, env, "netexec", "--chdir", "data", "--wait", "done", "./env.sh", "./pwd1", "./env1").wantCode(t, 0)
	if got, want := readTrim(t, filepath.Join(work, "pwd1")), filepath.Join(work, "data"); got != want {
		t.Errorf("the job ran in %q, want %q (--chdir data)", got, want)
	}
	vars := readEnv(t, filepath.Join(work, "env1"))
	for name, want := range map[string]string{
		"HOME": me.HomeDir, "USER": me.Username, "LOGNAME": me.Username, "SHELL": shell, "LANG": "C.UTF-8",
	} {
		if got := vars[name]; got != want {
			t.Errorf("the job's %s = %q, want %q", name, got, want)
		}
	}
	if v, ok := vars["FOO"]; ok {
		t.Errorf("the job got FOO=%s, which the default --export does not pass", v)
	}
	if _, ok := vars["NETMGR_ADDR"]; ok {
		t.Errorf("the job got the submitter's NETMGR_ADDR")
	}

	r.runEnv(t, env, "netexec", "--export", "FOO", "--wait", "done", "./env.sh", "./pwd2", "./env2").wantCode(t, 0)
	vars = readEnv(t, filepath.Join(work, "env2"))
	if got := vars["FOO"]; got != "bar" {
		t.Errorf("with --export FOO the job's FOO = %q, want bar", got)
	}
	if v, ok := vars["LANG"]; ok {
		t.Errorf("with --export FOO the job got LANG=%s too", v)
	}
	if pwd := readTrim(t, filepath.Join(work, "pwd2")); pwd == work {
		t.Errorf("without --chdir the job ran in the submitter's directory %s, want its exec dir", pwd)
	}

	res := r.run(t, "netexec", "./nope.sh")
	res.wantCode(t, exitUsage)
	if want := "./nope.sh: no such file in " + work; !strings.Contains(res.stderr, want) {
		t.Errorf("netexec ./nope.sh says %q, want it to contain %q", res.stderr, want)
	}
}

// testUnrunnable submits a job for sparc machines to a pool without any.
func testUnrunnable(t *testing.T, r *e2eRunner, cl *client.Client) {
	before := e2eJobCount(t, cl)
	res := r.run(t, "netexec", "--keys", "sparc", "/bin/true")
	res.wantCode(t, 0)
	if want := "no machine can run this now: 2 machines lack key sparc"; !strings.Contains(res.stderr, want) {
		t.Errorf("netexec --keys sparc says %q, want it to contain %q", res.stderr, want)
	}
	id := submittedID(t, res)
	t.Cleanup(func() { r.run(t, "netkill", id) })
	if got := e2eJobCount(t, cl); got != before+1 {
		t.Errorf("after an unrunnable submit the pool has %d jobs, want %d: it is queued", got, before+1)
	}

	res = r.run(t, "netexec", "--no-queue", "--keys", "sparc", "/bin/true")
	res.wantCode(t, exitError)
	for _, want := range []string{"no machine can run this now", "2 machines lack key sparc", "not queued"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("netexec --no-queue says %q, want it to contain %q", res.stderr, want)
		}
	}
	if got := e2eJobCount(t, cl); got != before+1 {
		t.Errorf("after a --no-queue refusal the pool has %d jobs, want %d", got, before+1)
	}
}

// testNames checks the automatic form is refused, an ambiguous name is an
// error listing its live jobs, and netkill --all kills them.
func testNames(t *testing.T, r *e2eRunner, cl *client.Client, work string) {
	res := r.run(t, "netexec", "--name", "job77", "/bin/true")
	res.wantCode(t, exitError)
	if !strings.Contains(res.stderr, "job<NUMBER> are the server's automatic names") {
		t.Errorf("netexec --name job77 says %q, want the automatic-name refusal", res.stderr)
	}

	gate := filepath.Join(work, "names.gate")
	loop := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done", gate)
	var ids []string
	for range 2 {
		res := r.run(t, "netexec", "--name", "dup", "/bin/sh", "-c", loop)
		res.wantCode(t, 0)
		ids = append(ids, submittedID(t, res))
	}
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })

	res = r.run(t, "netkill", "dup")
	res.wantCode(t, exitError)
	for _, want := range []string{"ambiguous job name", "2 live jobs", ids[0] + " (dup.", ids[1] + " (dup."} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("netkill dup says %q, want it to contain %q", res.stderr, want)
		}
	}
	r.run(t, "netkill", "--all", "dup").wantCode(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range ids {
		job, err := cl.WaitJob(ctx, id, client.WaitDone)
		if err != nil {
			t.Fatal(err)
		}
		if job.State != client.JobKilled {
			t.Errorf("after netkill --all dup, job %s is %s, want %s", id, job.State, client.JobKilled)
		}
	}
	// With one live job left of that name, the name means it.
	sub := r.run(t, "netexec", "--name", "dup", "/bin/sh", "-c", loop)
	sub.wantCode(t, 0)
	res = r.run(t, "netkill", "dup")
	res.wantCode(t, 0)
	if want := "job " + submittedID(t, sub) + ":"; !strings.HasPrefix(res.stdout, want) {
		t.Errorf("netkill dup printed %q, want the one live job's line %q...", res.stdout, want)
	}
}

// testWaitStarted fills every slot of the pool, then waits with
// --wait started for two more instances that run /bin/true: the wait
// says, after a second, that they are queued and why; once the slots
// free, it reports where each started, not that it has since exited.
func testWaitStarted(t *testing.T, r *e2eRunner, cl *client.Client, work string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ms, err := cl.Machines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slots := 0
	for _, m := range ms {
		slots += m.Slots
	}
	gate := filepath.Join(work, "wait.gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
	res := r.run(t, "netexec", "-n", fmt.Sprint(slots), "/bin/sh", "-c",
		fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done", gate))
	res.wantCode(t, 0)
	if _, err := cl.WaitJob(ctx, submittedID(t, res), client.WaitStarted); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, filepath.Join(r.links, "netexec"), "-n", "2", "--wait", "started", "/bin/true")
	cmd.Env = append(os.Environ(), r.env...)
	var stdout syncBuffer
	stderr := newLineWatch()
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waiting := regexp.MustCompile(`^waiting: instances 0,1 queued: all \d+ matching machines are busy`)
	line, ok := stderr.await(ctx, waiting)
	if !ok {
		t.Fatalf("netexec --wait started printed no line matching %s; stderr:\n%s\nstdout:\n%s", waiting, stderr.text(), stdout.String())
	}
	t.Logf("progress: %s", line)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("netexec --wait started: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.text())
	}
	out := stdout.String()
	started := regexp.MustCompile(`(?m)^instance [01]: running on stub\d pid \d+$`)
	if got := len(started.FindAllString(out, -1)); got != 2 {
		t.Errorf("netexec --wait started printed %d start lines, want 2:\n%s", got, out)
	}
	if strings.Contains(out, "exited") {
		t.Errorf("netexec --wait started reported the instances' later state:\n%s", out)
	}
	if n := strings.Count(stderr.text(), "waiting:"); n > 4 {
		t.Errorf("netexec --wait started printed %d progress lines for one change or two:\n%s", n, stderr.text())
	}
}

// submittedID returns the job id netexec printed.
func submittedID(t *testing.T, res e2eResult) string {
	t.Helper()
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("netexec printed no job id:\n%s", res)
	}
	return m[1]
}

// passwdShell is name's login shell in /etc/passwd, or /bin/sh.
func passwdShell(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Split(line, ":"); len(f) == 7 && f[0] == name && f[6] != "" {
			return f[6]
		}
	}
	return "/bin/sh"
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// readEnv reads the output of env(1) as a map.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	for _, line := range strings.Split(readTrim(t, path), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// lineWatch collects what a process writes and hands each complete line
// to whoever awaits one.
type lineWatch struct {
	syncBuffer
	mu      sync.Mutex // guards partial
	partial []byte     // the start of a line not yet complete
	lines   chan string
}

func newLineWatch() *lineWatch {
	return &lineWatch{lines: make(chan string, 1024)}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		select {
		case w.lines <- string(w.partial[:i]):
		default: // nobody awaits this many lines; text() still has them
		}
		w.partial = w.partial[i+1:]
	}
	return n, err
}

func (w *lineWatch) text() string { return w.syncBuffer.String() }

// await returns the first line matching re, or false once ctx ends.
func (w *lineWatch) await(ctx context.Context, re *regexp.Regexp) (string, bool) {
	for {
		select {
		case l := <-w.lines:
			if re.MatchString(l) {
				return l, true
			}
		case <-ctx.Done():
			return "", false
		}
	}
}
