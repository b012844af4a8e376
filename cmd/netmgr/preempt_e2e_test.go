package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// preemptGrace is queue LONG's kill_grace in the test: a requeued victim
// that ignores SIGTERM is killed this long after it.
const preemptGrace = 2 * time.Second

// preemptSlack bounds the rest of a preempting job's wait on a full
// pool beyond the grace: one scheduling pass, the Preempt and the
// victim's end committed, the next pass and the Start, on a shared box.
const preemptSlack = 20 * time.Second

// TestPreemptEndToEnd runs the DEBUG-preempts-LONG case on a
// 3-server TLS cluster of real processes, with a one-slot pool and two
// real users, both ways. requeue: alice's restartable LONG job, which
// ignores SIGTERM, runs; bob's DEBUG job starts within the kill grace
// plus a slack; alice's attempt ends preempted, is queued again with no
// restart counted and runs again after bob's; netmgr history and netmgr
// events say who preempted whom. suspend: alice's job's process is
// stopped (state T) while bob's runs, then runs again, the same attempt.
func TestPreemptEndToEnd(t *testing.T) {
	_, c, root, alice, bob := twoUserCluster(t, "nmpa", "nmpb")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	load := func(mode string) {
		t.Helper()
		db := fmt.Sprintf("machine %s = {nprocs=1}\nadd_q LONG = {priority=1, kill_grace=%ds}\nadd_q DEBUG = {priority=10, preempt=%s}\n",
			c.Stubs[0].Name, int(preemptGrace/time.Second), mode)
		if _, err := root.LoadDatabase(ctx, client.DatabaseText{Filename: "preempt.db", Text: db}); err != nil {
			t.Fatalf("load the database with preempt=%s: %v", mode, err)
		}
	}
	submit := func(u osUser, args ...string) string {
		t.Helper()
		code, text := runAs(t, c, u, append([]string{"exec"}, args...)...)
		m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(text)
		if code != 0 || m == nil {
			t.Fatalf("netmgr exec %q as %s: exit %d\n%s", args, u.name, code, text)
		}
		t.Cleanup(func() { _, _ = root.Kill(context.Background(), m[1], client.KillRequest{Signal: "KILL"}) })
		return m[1]
	}
	job := func(id string) client.Job {
		t.Helper()
		j, err := root.Job(ctx, id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		return j
	}

	// requeue.
	load("requeue")
	// It ignores SIGTERM, so only the grace's SIGKILL ends it.
	long := submit(alice, "--queue", "LONG", "--restart", "on-failure", "--max-restarts", "1", "/bin/sh", "-c", "trap '' TERM; sleep 300 & wait; sleep 300")
	testwait.For(t, 60*time.Second, "alice's LONG job to run", func() bool {
		return job(long).Instances[0].State == client.InstanceRunning
	})
	debug := submit(bob, "--queue", "DEBUG", "/bin/sleep", "3")
	var dj client.Job
	testwait.For(t, 60*time.Second, "bob's DEBUG job to start", func() bool {
		dj = job(debug)
		return !dj.Instances[0].StartedAt.IsZero()
	})
	if wait := dj.Instances[0].StartedAt.Sub(dj.SubmittedAt); wait > preemptGrace+preemptSlack {
		t.Errorf("bob's DEBUG job started %v after its submit on a full pool, want within the kill grace %v plus %v", wait, preemptGrace, preemptSlack)
	} else {
		t.Logf("bob's DEBUG job started %v after its submit (kill grace %v)", wait, preemptGrace)
	}
	lj := job(long)
	in := lj.Instances[0]
	if len(in.History) != 1 || in.History[0].State != "preempted" || in.History[0].Reason != "preempted by job "+debug || in.Restarts != 0 || in.Attempt != 2 {
		t.Fatalf("alice's LONG instance: attempt %d, restarts %d, history %+v; want attempt 2, none counted, the first ended preempted by job %s", in.Attempt, in.Restarts, in.History, debug)
	}
	if e := in.History[0].EndedAt.Sub(dj.SubmittedAt); e < preemptGrace-time.Second/2 {
		t.Errorf("alice's attempt ended %v after bob's submit, before the kill grace (%v): it ignores SIGTERM", e, preemptGrace)
	}
	code, text := runAs(t, c, alice, "history", long)
	if code != 0 || !strings.Contains(text, "preempted") || !strings.Contains(text, "job "+debug) {
		t.Errorf("netmgr history %s as alice: exit %d\n%s\nwant the attempt preempted by job %s", long, code, text, debug)
	}
	code, text = runAs(t, c, bob, "events")
	if code != 0 || !strings.Contains(text, "instance-preempted") || !strings.Contains(text, "preempted by job "+debug) {
		t.Errorf("netmgr events as bob: exit %d\n%s\nwant who preempted whom", code, text)
	}
	testwait.For(t, 60*time.Second, "alice's LONG job to run again after bob's", func() bool {
		in := job(long).Instances[0]
		return in.Attempt == 2 && in.State == client.InstanceRunning
	})
	if in := job(debug).Instances[0]; in.State != "exited" {
		t.Errorf("bob's DEBUG job: %s, want exited before alice's ran again", in.State)
	}

	// suspend: the same LONG attempt is stopped while bob's runs.
	load("suspend")
	pid := job(long).Instances[0].PID
	debug = submit(bob, "--queue", "DEBUG", "/bin/sleep", "4")
	testwait.For(t, 60*time.Second, "bob's second DEBUG job to start", func() bool {
		return !job(debug).Instances[0].StartedAt.IsZero()
	})
	lj = job(long)
	if in := lj.Instances[0]; in.State != "suspended" || in.Attempt != 2 {
		t.Fatalf("alice's LONG instance while bob's runs: %s attempt %d, want suspended, attempt 2", in.State, in.Attempt)
	}
	testwait.For(t, 30*time.Second, "alice's process to be stopped (state T)", func() bool {
		return pidState(pid) == "T"
	})
	if s := job(debug).Instances[0].State; s != client.InstanceRunning {
		t.Errorf("bob's job is %s while alice's is stopped, want running", s)
	}
	testwait.For(t, 60*time.Second, "alice's job to run again once bob's ended", func() bool {
		in := job(long).Instances[0]
		return in.State == client.InstanceRunning && in.Attempt == 2 && pidState(pid) != "T" && pidState(pid) != ""
	})
	if s := job(debug).Instances[0].State; s != "exited" {
		t.Errorf("bob's second DEBUG job: %s, want exited before alice's continued", s)
	}
}

// pidState is the state letter of process pid (/proc/PID/stat's third
// field), "" when it is gone.
func pidState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	return procState(string(b))
}
