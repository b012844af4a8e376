package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// counterScript counts to its argument, one a second, from its
// checkpoint: each attempt reads state/counter (0 when there is none),
// notes where it started in state/log, counts one more after a second,
// writes it and exits 85 (its checkpoint code) until it reaches the
// target, where it exits 0. SIGTERM (a vacate, netmgr restart) makes it
// write what it has and exit 85 at once.
const counterScript = `#!/bin/sh
mkdir -p state
n=$(cat state/counter 2>/dev/null || echo 0)
echo "start $n on $NETMGR_MACHINE attempt $NETMGR_ATTEMPT" >> state/log
[ "$n" -ge "$1" ] && exit 0
trap 'echo $n > state/counter; exit 85' TERM
sleep 1 &
wait $!
n=$((n + 1))
echo $n > state/counter.new && mv state/counter.new state/counter
[ "$n" -ge "$1" ] && exit 0
exit 85
`

// runAsOn is runAs through stub i's user socket.
func runAsOn(t *testing.T, c *servertest.ProcCluster, u osUser, i int, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, netmgrBinary(t), args...)
	cmd.Env = append(append([]string{"PATH=/usr/bin:/bin", "HOME=" + u.home, "USER=" + u.name, "NETMGR_RETRY_FOR=10s"}, c.Env()...),
		"NETMGR_SOCKET="+c.Stubs[i].Socket)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return exitErr.ExitCode(), string(out)
	}
	t.Fatalf("run netmgr %s as %s: %v\n%s", strings.Join(args, " "), u.name, err, out)
	return 0, ""
}

// checkpointUser returns a process cluster of 3 servers and 2 stubs and
// a real user who may use it, skipping the test where users cannot be
// made.
func checkpointUser(t *testing.T) (*servertest.ProcCluster, *client.Client, osUser) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the test creates an OS user (useradd) and runs netmgr as it, which needs root")
	}
	for _, tool := range []string{"useradd", "userdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: no %s on this machine to create the test's user: %v", tool, err)
		}
	}
	dir := t.TempDir()
	openToEveryone(t, dir)
	openToEveryone(t, filepath.Dir(netmgrBinary(t)))
	c, cl := procCluster(t, dir, 3, 2)
	if !c.Secure() {
		t.Fatal("the process cluster runs insecure; this test is about the secure one")
	}
	for _, s := range c.Stubs {
		openToEveryone(t, filepath.Dir(s.Socket))
	}
	return c, cl, newOSUser(t, "ckpt")
}

// checkpointJob submits the counter to target as u, keeping state/ as
// its checkpoint and its copy_out, and returns the job's id.
func checkpointJob(t *testing.T, c *servertest.ProcCluster, u osUser, target int) string {
	t.Helper()
	dir := t.TempDir()
	openToEveryone(t, dir)
	script := filepath.Join(dir, "counter.sh")
	if err := os.WriteFile(script, []byte(counterScript), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out := runAs(t, c, u, "exec", "--checkpoint", "state", "--checkpoint-exit", "85", "--copy-out", "state",
		script, strconv.Itoa(target))
	if code != 0 || !strings.Contains(out, " id ") {
		t.Fatalf("netexec the counter: exit %d\n%s", code, out)
	}
	return strings.Fields(out[strings.Index(out, " id ")+4:])[0]
}

// instanceOf returns instance 0 of job ref, zero when it cannot be read.
func instanceOf(cl *client.Client, ref string) client.Instance {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	j, err := cl.Job(ctx, ref)
	if err != nil || len(j.Instances) == 0 {
		return client.Instance{}
	}
	return j.Instances[0]
}

// checkCounterLog fetches job ref's outputs as u (through stub via) and
// checks its log: the attempts started from 0, then each from the last
// kept checkpoint, never from nothing again, up to target-1; it returns
// the log.
func checkCounterLog(t *testing.T, c *servertest.ProcCluster, u osUser, via int, ref string, target int) string {
	t.Helper()
	out := filepath.Join(u.home, "out-"+ref)
	if code, text := runAsOn(t, c, u, via, "fetch", ref, out); code != 0 {
		t.Fatalf("netmgr fetch %s: exit %d\n%s", ref, code, text)
	}
	data, err := os.ReadFile(filepath.Join(out, "state", "log"))
	if err != nil {
		t.Fatalf("the counter's log: %v", err)
	}
	log := string(data)
	prev := -1
	for i, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var n int
		if _, err := fmt.Sscanf(l, "start %d ", &n); err != nil {
			t.Fatalf("log line %d is %q: %v\n%s", i, l, err, log)
		}
		// Each attempt starts where the last kept checkpoint left off:
		// one more than the one before, or the same when that one was
		// asked to stop (it keeps what it has) or lost with its machine.
		if (i == 0 && n != 0) || (i > 0 && n != prev && n != prev+1) {
			t.Fatalf("log line %d is %q after start %d: an attempt did not start from the last checkpoint\n%s", i, l, prev, log)
		}
		prev = n
	}
	if prev != target-1 {
		t.Errorf("the last attempt started from %d, want %d\n%s", prev, target-1, log)
	}
	if counter, _ := os.ReadFile(filepath.Join(out, "state", "counter")); strings.TrimSpace(string(counter)) != strconv.Itoa(target) {
		t.Errorf("final counter %q, want %d", counter, target)
	}
	return log
}

// TestCheckpointSurvivesMachineAndRestart: a counter that checkpoints
// every second, run by a real user, continues from its last value after
// its machine is lost (stub, supervisor and job SIGKILLed: it moves to the
// other machine) and after netmgr restart, and netmgr history shows its
// checkpoints.
func TestCheckpointSurvivesMachineAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and waits for a machine's lease to expire")
	}
	c, cl, u := checkpointUser(t)
	const target = 12
	ref := checkpointJob(t, c, u, target)

	var first client.Instance
	testwait.For(t, 60*time.Second, "the counter at 3 (three checkpoints kept)", func() bool {
		first = instanceOf(cl, ref)
		return first.Checkpoint != nil && first.Attempt >= 4 && first.Machine != "" && first.Restarts == 0
	})
	victim := -1
	for i, s := range c.Stubs {
		if s.Name == first.Machine {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("the counter runs on %q, no stub of the cluster", first.Machine)
	}
	if _, err := c.KillStubMachine(victim); err != nil {
		t.Fatal(err)
	}
	other := c.Stubs[1-victim].Name
	testwait.For(t, 90*time.Second, "the counter checkpointing on "+other, func() bool {
		in := instanceOf(cl, ref)
		return in.Checkpoint != nil && in.Checkpoint.Machine == other
	})

	survivor := 1 - victim
	if code, text := runAsOn(t, c, u, survivor, "restart", ref); code != 0 {
		t.Fatalf("netmgr restart %s: exit %d\n%s", ref, code, text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	job, err := cl.WaitJob(ctx, ref, client.WaitDone)
	if err != nil {
		t.Fatalf("wait for the counter: %v", err)
	}
	if in := job.Instances[0]; in.State != client.InstanceExited || in.ExitCode != 0 || in.Restarts != 0 {
		t.Fatalf("the counter ended %s exit %d after %d counted restarts, want exited 0 and none counted", in.State, in.ExitCode, in.Restarts)
	}
	log := checkCounterLog(t, c, u, survivor, ref, target)
	t.Logf("the counter's log:\n%s", log)
	if os.Getenv("CKPT_DEBUG") != "" {
		t.Logf("logs:\n%s", c.Logs(200000))
	}
	if !strings.Contains(log, " on "+first.Machine+" ") || !strings.Contains(log, " on "+other+" ") {
		t.Errorf("the counter did not run on both %s and %s:\n%s", first.Machine, other, log)
	}

	code, text := runAsOn(t, c, u, survivor, "history", ref)
	if code != 0 || !strings.Contains(text, "CHECKPOINT") || strings.Count(text, "B@") < target-1 {
		t.Errorf("netmgr history %s: exit %d, want a checkpoint (SIZE@TIME) on each of at least %d attempts:\n%s", ref, code, target-1, text)
	}
}
