package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
)

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return p
}

// waitProblem waits until machine name drains with a problem containing
// want, and returns the problem.
func waitProblem(t *testing.T, cl *client.Client, name, want string) string {
	t.Helper()
	var problem string
	testwait.For(t, 20*time.Second, name+" draining for "+want, func() bool {
		ms, err := cl.Machines(ctx(t))
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.Name == name && m.State == client.MachineDraining && strings.Contains(m.Problem, want) {
				problem = m.Problem
				return true
			}
		}
		return false
	})
	return problem
}

// TestFailingPrologueDrainsAndRequeues runs a job on a machine whose
// prologue fails: the machine drains with the prologue's reason, and the
// instance runs on another machine with no restart counted, although the
// job has no restart policy. The prologue saw the job's identity.
func TestFailingPrologueDrainsAndRequeues(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dir := t.TempDir()
	prologue := writeScript(t, dir, "prologue", `env | grep ^NETMGR_ | sort > `+dir+`/prologue.env
echo "no scratch space on /scratch"
exit 3
`)
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) { cfg.Prologue = prologue })
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Name: "guarded",
		Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", "echo ran on $NETMGR_MACHINE"}}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	problem := waitProblem(t, cl, "alpha", "prologue failed")
	if !strings.Contains(problem, prologue+" exit status 3: no scratch space on /scratch") {
		t.Errorf("alpha's problem = %q, want the prologue, its exit status and its first line", problem)
	}
	env, err := os.ReadFile(filepath.Join(dir, "prologue.env"))
	if err != nil {
		t.Fatalf("the prologue left no environment: %v", err)
	}
	for _, want := range []string{"NETMGR_ATTEMPT=1", "NETMGR_INSTANCE=0", "NETMGR_JOB_ID=" + strconv.FormatUint(resp.ID, 10),
		"NETMGR_JOB_NAME=guarded", "NETMGR_MACHINE=alpha", "NETMGR_OWNER=" + resp.Owner, "NETMGR_SCRIPT=prologue", "NETMGR_USER=" + resp.Owner} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("the prologue's environment lacks %s:\n%s", want, env)
		}
	}

	c.AddStub("beta")
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	in := job.Instances[0]
	if in.State != client.InstanceExited || in.ExitCode != 0 || in.Machine != "beta" {
		t.Errorf("got %s(%d) on %s, want exited(0) on beta", in.State, in.ExitCode, in.Machine)
	}
	if in.Restarts != 0 {
		t.Errorf("Restarts = %d, want 0: the prologue's failure is the machine's, not the job's", in.Restarts)
	}
}

// TestFailingEpilogueDrains runs a job on a machine whose epilogue fails:
// the job's end stands as it was, and the machine drains with the
// epilogue's reason. The epilogue saw how the attempt ended.
func TestFailingEpilogueDrains(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dir := t.TempDir()
	epilogue := writeScript(t, dir, "epilogue", `env | grep ^NETMGR_ | sort > `+dir+`/epilogue.env
echo "cannot unmount /scratch" >&2
exit 1
`)
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) { cfg.Epilogue = epilogue })
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("exit 4", "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if in := job.Instances[0]; in.State != client.InstanceFailed || in.ExitCode != 4 {
		t.Errorf("got %s(%d), want failed(4) as the job ended", in.State, in.ExitCode)
	}
	problem := waitProblem(t, cl, "alpha", "epilogue failed")
	if !strings.Contains(problem, epilogue+" exit status 1: cannot unmount /scratch") {
		t.Errorf("alpha's problem = %q, want the epilogue, its exit status and its first line", problem)
	}
	env, err := os.ReadFile(filepath.Join(dir, "epilogue.env"))
	if err != nil {
		t.Fatalf("the epilogue left no environment: %v", err)
	}
	for _, want := range []string{"NETMGR_SCRIPT=epilogue", "NETMGR_EXIT_CODE=4", "NETMGR_JOB_ID=" + strconv.FormatUint(resp.ID, 10)} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("the epilogue's environment lacks %s:\n%s", want, env)
		}
	}
}
