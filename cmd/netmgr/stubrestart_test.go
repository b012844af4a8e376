package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// restartJob is a job of the stub restart tests: it appends its pid to a
// file, then runs until a second file exists and exits 0.
type restartJob struct {
	ref           string
	pidFile, done string
}

// submitRestartJob submits a restartJob pinned to machines (any when
// empty) with the given restart policy and waits until it runs and has
// written its pid.
func submitRestartJob(t *testing.T, cl *client.Client, dir, name, restart string, machines []string) restartJob {
	t.Helper()
	j := restartJob{pidFile: filepath.Join(dir, name+".pids"), done: filepath.Join(dir, name+".done")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := fmt.Sprintf("echo $$ >> %s; while [ ! -e %s ]; do sleep 0.1; done", j.pidFile, j.done)
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Name: name, Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", script},
		Min: 1, Machines: machines, Restart: restart,
	}})
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	j.ref = fmt.Sprint(sub.ID)
	if _, err := cl.WaitJob(ctx, j.ref, client.WaitStarted); err != nil {
		t.Fatalf("wait for %s to run: %v", name, err)
	}
	testwait.For(t, 30*time.Second, name+" wrote its pid", func() bool { return len(j.pids(t)) == 1 })
	return j
}

// pids returns the pids the job's attempts wrote, one per attempt that
// started.
func (j restartJob) pids(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(j.pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %v", j.pidFile, err)
		}
		out = append(out, pid)
	}
	return out
}

// alive reports whether process pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// machineAndInstance returns the state of machine and of the job's one
// instance with its attempt and machine; empty strings when a request
// fails.
func machineAndInstance(cl *client.Client, machine, ref string) (mstate string, in client.Instance) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := cl.Machines(ctx)
	if err != nil {
		return "", in
	}
	for _, m := range ms {
		if m.Name == machine {
			mstate = m.State
		}
	}
	job, err := cl.Job(ctx, ref)
	if err != nil || len(job.Instances) != 1 {
		return mstate, in
	}
	return mstate, job.Instances[0]
}

// TestStubRestartKeepsJobs stops a stub the way systemctl restart does
// (SIGTERM), keeps it down for longer than a lease and its margin, and
// starts it again. Meanwhile the machine is restarting and its jobs, one
// restartable and one not, stay running with their first attempt and the
// same processes; after the restart their ends are reported as usual.
func TestStubRestartKeepsJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and restarts a stub process (about 20 s)")
	}
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 2)
	victim := c.Stubs[0].Name
	jobs := []restartJob{
		submitRestartJob(t, cl, dir, "plain", "", []string{victim}),
		submitRestartJob(t, cl, dir, "restartable", client.RestartOnFailure, []string{victim}),
	}
	pids := []int{jobs[0].pids(t)[0], jobs[1].pids(t)[0]}

	if err := c.StopStub(0, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	testwait.For(t, 30*time.Second, victim+" restarting", func() bool {
		m, _ := machineAndInstance(cl, victim, jobs[0].ref)
		return m == client.MachineRestarting
	})
	// Through the other machine's user socket: this one's is gone.
	code, out := runNetmgr(t, append(c.Env(), "NETMGR_SOCKET="+c.Stubs[1].Socket), "status", "-m")
	if code != 0 || !strings.Contains(out, client.MachineRestarting) {
		t.Errorf("netstatus -m while the stub restarts: exit %d\n%s\nwant the machine restarting", code, out)
	}
	// Longer than the lease and its margin (3 s + 1 s), after which a
	// machine that left would have had its jobs lost or restarted.
	testwait.Holds(t, 8*time.Second-time.Since(stopped), "the restarting stub's jobs running", func() bool {
		for i, j := range jobs {
			m, in := machineAndInstance(cl, victim, j.ref)
			if m != "" && m != client.MachineRestarting {
				t.Fatalf("%s is %s %v after the stub stopped, want restarting", victim, m, time.Since(stopped).Round(time.Millisecond))
			}
			if in.State != "" && (in.State != client.InstanceRunning || in.Attempt != 1) {
				t.Fatalf("job %s is %s, attempt %d, %v after the stub stopped; want running, attempt 1",
					j.ref, in.State, in.Attempt, time.Since(stopped).Round(time.Millisecond))
			}
			if !alive(pids[i]) {
				t.Fatalf("the process of job %s (pid %d) is gone while the stub restarts", j.ref, pids[i])
			}
		}
		return true
	})

	if err := c.RestartStub(0); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	testwait.For(t, 60*time.Second, victim+" up again", func() bool {
		m, _ := machineAndInstance(cl, victim, jobs[0].ref)
		return m == client.MachineUp
	})
	t.Logf("%s up %v after its new stub listened", victim, time.Since(restarted).Round(time.Millisecond))
	for i, j := range jobs {
		if got := j.pids(t); len(got) != 1 || !alive(pids[i]) {
			t.Fatalf("job %s: attempts' pids %v, pid %d alive %v; want the one process still running", j.ref, got, pids[i], alive(pids[i]))
		}
		if err := os.WriteFile(j.done, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, j := range jobs {
		job, err := cl.WaitJob(ctx, j.ref, client.WaitDone)
		if err != nil {
			t.Fatalf("wait for job %s: %v", j.ref, err)
		}
		in := job.Instances[0]
		if in.State != client.InstanceExited || in.ExitCode != 0 || in.Attempt != 1 || in.Machine != victim {
			t.Errorf("job %s ended %s (exit %d), attempt %d on %s; want exited 0, attempt 1 on %s", j.ref, in.State, in.ExitCode, in.Attempt, in.Machine, victim)
		}
	}
	// netstatus JOB and netstatus -j's filters, on the jobs just ended.
	env := append(c.Env(), "NETMGR_SOCKET="+c.Stubs[1].Socket)
	code, out = runNetmgr(t, env, "status", "plain")
	if want := "Instance=0 Attempt=1 State=exited(0) Machine=" + victim; code != 0 || !strings.Contains(out, "JobId="+jobs[0].ref) || !strings.Contains(out, want) {
		t.Errorf("netstatus plain: exit %d\n%s\nwant job %s's detail with %q", code, out, jobs[0].ref, want)
	}
	code, out = runNetmgr(t, env, "status", "-j", "--name", "restartable", "--state", "exited")
	if code != 0 || !strings.Contains(out, "restartable.") || strings.Contains(out, "plain.") {
		t.Errorf("netstatus -j --name restartable --state exited: exit %d\n%s\nwant the restartable job alone", code, out)
	}
	evs, err := cl.Events(ctx, 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	for _, e := range evs {
		if e.Kind == "instance-lost" || e.Kind == "instance-unknown" {
			t.Errorf("event %s %s: no instance may be lost or unknown across a stub restart", e.Kind, e.Detail)
		}
	}
}

// TestStubRestartNotBack stops a stub for a restart and never starts it
// again. The machine is restarting until the servers' --restart-grace has
// run out; then its lease expires as a lost machine's would: the
// restartable job's first attempt has been killed by its supervisor
// before the second starts on the other machine (never two at once), and
// the other job is lost.
func TestStubRestartNotBack(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and waits out a restart grace (about 25 s)")
	}
	const grace = 5 * time.Second
	dir := t.TempDir()
	c, cl := procClusterArgs(t, dir, 3, 2, []string{"--restart-grace", grace.String()})
	restartable := submitRestartJob(t, cl, dir, "restartable", client.RestartOnFailure, nil)
	_, in := machineAndInstance(cl, "", restartable.ref)
	victim, other := 0, 1
	if in.Machine == c.Stubs[1].Name {
		victim, other = 1, 0
	}
	name := c.Stubs[victim].Name
	plain := submitRestartJob(t, cl, dir, "plain", "", []string{name})
	first := restartable.pids(t)[0]
	t.Cleanup(func() {
		for _, j := range []restartJob{restartable, plain} {
			_ = os.WriteFile(j.done, nil, 0o644)
		}
	})

	if err := c.StopStub(victim, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	testwait.For(t, 30*time.Second, name+" restarting", func() bool {
		m, _ := machineAndInstance(cl, name, plain.ref)
		return m == client.MachineRestarting
	})
	var moved time.Duration
	testwait.For(t, 60*time.Second, "the restartable job running again on "+c.Stubs[other].Name, func() bool {
		pids := restartable.pids(t)
		if len(pids) > 1 && alive(first) {
			t.Fatalf("attempt 2 of job %s started (pid %d) while attempt 1 (pid %d) still runs", restartable.ref, pids[1], first)
		}
		_, in := machineAndInstance(cl, "", restartable.ref)
		if in.Attempt == 1 && in.State != client.InstanceRunning && in.State != "" {
			t.Fatalf("job %s is %s before the restart grace ran out; want running", restartable.ref, in.State)
		}
		moved = time.Since(stopped)
		return in.Attempt == 2 && in.State == client.InstanceRunning && in.Machine == c.Stubs[other].Name && len(pids) == 2
	})
	// The grant was sent before the stub stopped; the leader waits the
	// grace and a 1 s margin from when it arrived.
	if moved < grace-2*time.Second {
		t.Errorf("the restartable job moved %v after the stub stopped, before the restart grace of %v", moved.Round(time.Millisecond), grace)
	}
	t.Logf("the restartable job moved %v after the stub stopped (restart grace %v)", moved.Round(time.Millisecond), grace)
	// netstatus JOB shows the lost attempt, then the current one.
	env := append(c.Env(), "NETMGR_SOCKET="+c.Stubs[other].Socket)
	code, out := runNetmgr(t, env, "status", restartable.ref)
	lost := fmt.Sprintf("Instance=0 Attempt=1 State=lost Machine=%s", name)
	current := fmt.Sprintf("Instance=0 Attempt=2 State=running Machine=%s", c.Stubs[other].Name)
	if code != 0 || !strings.Contains(out, lost) || !strings.Contains(out, current) || strings.Index(out, lost) > strings.Index(out, current) {
		t.Errorf("netstatus %s: exit %d\n%s\nwant %q, then %q", restartable.ref, code, out, lost, current)
	}
	testwait.For(t, 60*time.Second, "the plain job lost and "+name+" down", func() bool {
		m, in := machineAndInstance(cl, name, plain.ref)
		if in.Attempt > 1 {
			t.Fatalf("job %s got attempt %d: work without a restart policy must never run again", plain.ref, in.Attempt)
		}
		return m == client.MachineDown && in.State == client.InstanceLost
	})
}

// TestStubRestartAcrossElection stops a stub for a restart and kills the
// leader that granted the restart lease. The new leader does not know the
// grace granted, so it holds the machine restarting (for the longest
// grace) instead of expiring its lease after the plain 4 s; the new stub
// is back once it has renewed with this leader, and the job, which never
// stopped, ends as usual.
func TestStubRestartAcrossElection(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr, restarts a stub and kills the leader (about 30 s)")
	}
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 2)
	victim := c.Stubs[0].Name
	job := submitRestartJob(t, cl, dir, "restartable", client.RestartOnFailure, []string{victim})
	pid := job.pids(t)[0]

	if err := c.StopStub(0, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, victim+" restarting", func() bool {
		m, _ := machineAndInstance(cl, victim, job.ref)
		return m == client.MachineRestarting
	})
	leader, name := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	if err := c.KillServer(leader, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	elected := time.Now()
	_, newName := c.Leader()
	t.Logf("killed leader %s; %s leads", name, newName)
	testwait.Holds(t, 8*time.Second-time.Since(elected), "the restarting stub's job running under the new leader", func() bool {
		m, in := machineAndInstance(cl, victim, job.ref)
		if m != "" && m != client.MachineRestarting {
			t.Fatalf("%s is %s under the new leader, want restarting", victim, m)
		}
		if in.State != "" && (in.State != client.InstanceRunning || in.Attempt != 1) {
			t.Fatalf("job %s is %s, attempt %d, under the new leader; want running, attempt 1", job.ref, in.State, in.Attempt)
		}
		if !alive(pid) {
			t.Fatalf("the job's process (pid %d) is gone while the stub restarts", pid)
		}
		return true
	})
	if err := c.RestartStub(0); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, victim+" up again", func() bool {
		m, _ := machineAndInstance(cl, victim, job.ref)
		return m == client.MachineUp
	})
	if err := os.WriteFile(job.done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done, err := cl.WaitJob(ctx, job.ref, client.WaitDone)
	if err != nil {
		t.Fatalf("wait for job %s: %v", job.ref, err)
	}
	if in := done.Instances[0]; in.State != client.InstanceExited || in.Attempt != 1 || len(job.pids(t)) != 1 {
		t.Errorf("job %s ended %s, attempt %d, pids %v; want exited, attempt 1, one process", job.ref, in.State, in.Attempt, job.pids(t))
	}
}
