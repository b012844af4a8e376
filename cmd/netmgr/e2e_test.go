package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// e2eCmdTimeout bounds one CLI invocation. Generous: a command issued
// right after the leader dies rides through an election.
const e2eCmdTimeout = 90 * time.Second

// TestE2EProcessCluster runs the real binary as 3 servers and 2 stubs on
// 127.0.0.1 and drives it through the netexec and netstatus symlinks, the
// way a user would: a 3-instance job, status views, bad input, a job that
// runs right after the leader is SIGKILLed, and the killed server's restart
// on its data directory.
func TestE2EProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 5 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netstatus", "netkill")
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}

	c, err := servertest.StartProcCluster(bin, filepath.Join(dir, "cluster"), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(6000))
		}
	})
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitMachines(2, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client(client.WithUser("e2e"))
	if err != nil {
		t.Fatal(err)
	}
	stubs := []string{c.Stubs[0].Name, c.Stubs[1].Name}
	r := &e2eRunner{links: links, env: c.Env()}

	t.Run("servers", func(t *testing.T) {
		res := r.run(t, "netstatus", "-s", "--json")
		res.wantCode(t, 0)
		rows := e2eObjects(t, res.stdout)
		if got, want := len(rows), 3; got != want {
			t.Fatalf("netstatus -s --json: got %d servers, want %d\n%s", got, want, res.stdout)
		}
		leaders := 0
		for _, o := range rows {
			if o["role"] == "leader" {
				leaders++
			}
		}
		if got, want := leaders, 1; got != want {
			t.Errorf("netstatus -s --json: got %d leaders, want %d\n%s", got, want, res.stdout)
		}
	})

	t.Run("machines", func(t *testing.T) {
		res := r.run(t, "netstatus", "-m", "--json")
		res.wantCode(t, 0)
		var names []string
		for _, o := range e2eObjects(t, res.stdout) {
			if o["state"] == client.MachineUp {
				names = append(names, fmt.Sprint(o["name"]))
			}
		}
		sort.Strings(names)
		if got, want := names, stubs; !slices.Equal(got, want) {
			t.Errorf("netstatus -m --json: got machines up %v, want %v\n%s", got, want, res.stdout)
		}
	})

	t.Run("exec three instances", func(t *testing.T) {
		script := fmt.Sprintf(`echo $NETMGR_INSTANCE > %s/out.$NETMGR_INSTANCE`, out)
		res := r.run(t, "netexec", "-n", "3", "--name", "e2e-first", "--wait", "done", "/bin/sh", "-c", script)
		res.wantCode(t, 0)
		if !strings.Contains(res.stdout, "e2e-first") {
			t.Errorf("netexec output does not name the job e2e-first:\n%s", res.stdout)
		}

		files, err := filepath.Glob(filepath.Join(out, "out.*"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(files), 3; got != want {
			t.Fatalf("got %d output files %v, want %d", got, files, want)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.TrimSpace(string(data)), strings.TrimPrefix(filepath.Ext(f), "."); got != want {
				t.Errorf("%s: got content %q, want %q", f, got, want)
			}
		}

		rows := r.jobRows(t, "e2e-first")
		if got, want := len(rows), 3; got != want {
			t.Fatalf("netstatus -j --json: got %d rows of e2e-first, want %d", got, want)
		}
		for i, o := range rows {
			if got, want := o["state"], client.InstanceExited; got != want {
				t.Errorf("row %d: got state %v, want %v", i, got, want)
			}
			if got, want := o["exit_code"], float64(0); got != want {
				t.Errorf("row %d: got exit_code %v, want %v", i, got, want)
			}
			if m := fmt.Sprint(o["machine"]); !slices.Contains(stubs, m) {
				t.Errorf("row %d: got machine %q, want one of %v", i, m, stubs)
			}
		}

		text := r.run(t, "netstatus", "-j")
		text.wantCode(t, 0)
		for _, col := range []string{"job name", "binary name", "where"} {
			if !strings.Contains(strings.ToLower(text.stdout), col) {
				t.Errorf("netstatus -j: no %q column:\n%s", col, text.stdout)
			}
		}
		for _, s := range []string{"e2e-first", "/bin/sh"} {
			if !strings.Contains(text.stdout, s) {
				t.Errorf("netstatus -j: no %q:\n%s", s, text.stdout)
			}
		}
		if !strings.Contains(text.stdout, stubs[0]) && !strings.Contains(text.stdout, stubs[1]) {
			t.Errorf("netstatus -j: names neither machine %v:\n%s", stubs, text.stdout)
		}
	})

	t.Run("unknown binary", func(t *testing.T) {
		res := r.run(t, "netexec", "--name", "e2e-badbin", "--wait", "done", "/nonexistent/bin")
		if res.code == 0 {
			t.Fatalf("netexec of /nonexistent/bin: got exit code 0, want non-zero\n%s", res)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		job, err := cl.Job(ctx, "e2e-badbin")
		if err != nil {
			t.Fatalf("job e2e-badbin: %v", err)
		}
		if got, want := len(job.Instances), 1; got != want {
			t.Fatalf("got %d instances, want %d: %+v", got, want, job)
		}
		in := job.Instances[0]
		if got, want := in.State, client.InstanceFailed; got != want {
			t.Errorf("got instance state %q, want %q: %+v", got, want, in)
		}
		if in.Error == "" {
			t.Errorf("instance of /nonexistent/bin records no exec error: %+v", in)
		}
		rows := r.jobRows(t, "e2e-badbin")
		if len(rows) != 1 || rows[0]["state"] != client.InstanceFailed {
			t.Errorf("netstatus -j --json: got rows %v, want one failed row", rows)
		}
	})

	t.Run("malformed spec", func(t *testing.T) {
		before := e2eJobCount(t, cl)
		res := r.run(t, "netexec", "binaries={x86_64=/bin/sh},min=x")
		if res.code == 0 {
			t.Fatalf("netexec of a malformed spec: got exit code 0, want non-zero\n%s", res)
		}
		pos := regexp.MustCompile(`(?i)\d+:\d+|(col(umn)?|pos(ition)?|offset|char(acter)?)\s*\d+`)
		if msg := res.stdout + res.stderr; !pos.MatchString(msg) {
			t.Errorf("netexec of a malformed spec: message names no position:\n%s", msg)
		}
		if got, want := e2eJobCount(t, cl), before; got != want {
			t.Errorf("after a malformed spec: got %d jobs, want %d (no job created)", got, want)
		}
	})

	t.Run("unreachable address", func(t *testing.T) {
		res := r.runEnv(t, []string{"NETMGR_ADDR=", "NETMGR_SOCKET=", "NETMGR_RETRY_FOR=2s"}, "netexec", "--addr", "http://127.0.0.1:1", "/bin/true")
		if res.code == 0 {
			t.Fatalf("netexec --addr http://127.0.0.1:1: got exit code 0, want non-zero\n%s", res)
		}
		if msg := res.stdout + res.stderr; !strings.Contains(msg, "127.0.0.1:1") {
			t.Errorf("netexec --addr http://127.0.0.1:1: message does not name the address:\n%s", msg)
		}
	})

	// Last: it kills the leader and restarts it.
	t.Run("leader failover", func(t *testing.T) {
		li, name := c.Leader()
		if li < 0 {
			t.Fatal("no leader before the failover")
		}
		if err := c.KillServer(li, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		t.Logf("SIGKILLed leader %s", name)

		marker := filepath.Join(out, "second")
		res := r.run(t, "netexec", "--name", "e2e-second", "--wait", "done", "/bin/sh", "-c", "echo done > "+marker)
		res.wantCode(t, 0)
		if data, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(data)) != "done" {
			t.Errorf("second job after failover: got %q, %v; want \"done\"", data, err)
		}
		if err := c.WaitLeader(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if ni, nn := c.Leader(); ni == li {
			t.Errorf("leader after failover: got %s, the killed server", nn)
		}

		rows := r.jobRows(t, "e2e-first")
		if got, want := len(rows), 3; got != want {
			t.Fatalf("after failover, netstatus -j --json: got %d rows of e2e-first, want %d", got, want)
		}
		for i, o := range rows {
			if got, want := o["state"], client.InstanceExited; got != want {
				t.Errorf("after failover, row %d: got state %v, want %v", i, got, want)
			}
		}

		// The killed server comes back on its data directory and catches
		// up with everything committed while it was gone.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		second, err := cl.Job(ctx, "e2e-second")
		if err != nil {
			t.Fatalf("job e2e-second: %v", err)
		}
		if err := c.RestartServer(li); err != nil {
			t.Fatal(err)
		}
		var last e2eResult
		ok := testwait.Poll(60*time.Second, func() bool {
			last = r.run(t, "netstatus", "-s", "--json")
			if last.code != 0 {
				return false
			}
			leaders := 0
			caughtUp := false
			for _, o := range e2eObjects(t, last.stdout) {
				if o["error"] != nil {
					return false
				}
				if o["role"] == "leader" {
					leaders++
				}
				if idx, _ := o["last_index"].(float64); o["name"] == name && uint64(idx) >= second.Index {
					caughtUp = true
				}
			}
			return leaders == 1 && caughtUp
		})
		if !ok {
			t.Errorf("restarted %s did not rejoin and catch up to index %d:\n%s", name, second.Index, last)
		}
	})
}

// e2eRunner runs the CLI through its symlinks against one cluster.
type e2eRunner struct {
	links string   // directory holding the netexec, netstatus, ... symlinks
	env   []string // NETMGR_ADDR and the rest of the cluster's environment
	dir   string   // the commands' working directory; "" is the test's
}

// e2eResult is one CLI run.
type e2eResult struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r e2eResult) String() string {
	return fmt.Sprintf("$ %s\nexit code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(printableList(r.args), " "), r.code, r.stdout, r.stderr)
}

func (r e2eResult) wantCode(t *testing.T, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("got exit code %d, want %d\n%s", r.code, want, r)
	}
}

func (r *e2eRunner) run(t *testing.T, name string, args ...string) e2eResult {
	t.Helper()
	return r.runEnv(t, nil, name, args...)
}

// runEnv runs links/name with the cluster's environment, then env.
func (r *e2eRunner) runEnv(t *testing.T, env []string, name string, args ...string) e2eResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.links, name), args...)
	cmd.Env = append(append(os.Environ(), r.env...), env...)
	cmd.Dir = r.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := e2eResult{args: append([]string{name}, args...), stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		res.code = exitErr.ExitCode()
	default:
		t.Fatalf("run %s: %v\n%s", name, err, res)
	}
	return res
}

// jobRows returns the rows of job name from `netstatus -j --json`, one
// object per instance.
func (r *e2eRunner) jobRows(t *testing.T, name string) []map[string]any {
	t.Helper()
	res := r.run(t, "netstatus", "-j", "--json")
	res.wantCode(t, 0)
	var rows []map[string]any
	for _, o := range e2eObjects(t, res.stdout) {
		if o["name"] == name {
			rows = append(rows, o)
		}
	}
	if len(rows) == 0 {
		t.Logf("netstatus -j --json has no rows of %s:\n%s", name, res.stdout)
	}
	return rows
}

// e2eObjects decodes the JSON array of objects the --json views print.
func e2eObjects(t *testing.T, text string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal([]byte(text), &rows); err != nil {
		t.Fatalf("decode JSON array of objects: %v\n%s", err, text)
	}
	return rows
}

func e2eJobCount(t *testing.T, cl *client.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs, err := cl.Jobs(ctx)
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	return len(jobs)
}
