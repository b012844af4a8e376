package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// poolWithStubs starts n servers and the named stubs and waits until every
// stub is an up machine.
func poolWithStubs(t *testing.T, servers int, stubs ...string) (*servertest.Cluster, *client.Client) {
	t.Helper()
	c := servertest.NewCluster(t, servers)
	c.WaitLeader()
	for _, name := range stubs {
		c.AddStub(name)
	}
	cl := c.Client()
	// What the servers said last, for the log of a test that fails here.
	last := "no answer yet"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("machines as last seen by poolWithStubs: %s", last)
		}
	})
	// 30 s: under the whole suite on 2 cores, three stubs once took more
	// than 15 s to be up; the wait ends as soon as they are.
	testwait.For(t, 30*time.Second, "stubs up", func() bool {
		ms, err := cl.Machines(ctx(t))
		if err != nil {
			last = err.Error()
			return false
		}
		up := 0
		var states []string
		for _, m := range ms {
			states = append(states, m.Name+"="+m.State)
			if m.State == client.MachineUp {
				up++
			}
		}
		last = strings.Join(states, " ")
		return up == len(stubs)
	})
	return c, cl
}

func TestJobRunsOnStubsEndToEnd(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 3, "alpha", "beta")
	out := t.TempDir()
	spec := shSpec(`echo "$NETMGR_INSTANCE $NETMGR_MACHINE" > `+out+`/out.$NETMGR_INSTANCE; exit $NETMGR_INSTANCE`, 3)
	spec.Name = "e2e"
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), strconv.FormatUint(resp.ID, 10), client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if job.State != client.JobFailed {
		t.Errorf("job state %q, want failed (instances exit with their index)", job.State)
	}
	for _, in := range job.Instances {
		wantState := client.InstanceExited
		if in.Index > 0 {
			wantState = client.InstanceFailed
		}
		if in.State != wantState || in.ExitCode != in.Index {
			t.Errorf("instance %d: state %s exit %d, want %s exit %d", in.Index, in.State, in.ExitCode, wantState, in.Index)
		}
		if !slices.Contains([]string{"alpha", "beta"}, in.Machine) || in.PID == 0 || in.Binary != "/bin/sh" {
			t.Errorf("instance %d: machine %q pid %d binary %q", in.Index, in.Machine, in.PID, in.Binary)
		}
		data, err := os.ReadFile(filepath.Join(out, "out."+strconv.Itoa(in.Index)))
		if err != nil {
			t.Fatalf("instance %d left no file: %v", in.Index, err)
		}
		if got, want := strings.TrimSpace(string(data)), strconv.Itoa(in.Index)+" "+in.Machine; got != want {
			t.Errorf("instance %d wrote %q, want %q", in.Index, got, want)
		}
	}
}

func TestUnknownBinaryFailsWithExecError(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/nonexistent/bin"}}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	in := job.Instances[0]
	if in.State != client.InstanceFailed || !strings.Contains(in.Error, "/nonexistent/bin") {
		t.Errorf("got state %s error %q, want failed naming the binary", in.State, in.Error)
	}
}

func TestKillEndsRunningAndQueuedInstances(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	// One more instance than the machine has slots, so one stays queued.
	n := ms[0].CPUs + 1
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}, Min: n,
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	testwait.For(t, 10*time.Second, "all slots running", func() bool {
		job, err := cl.Job(ctx(t), resp.Name)
		if err != nil {
			return false
		}
		running := 0
		for _, in := range job.Instances {
			if in.State == client.InstanceRunning {
				running++
			}
		}
		return running == n-1
	})
	kr, err := cl.Kill(ctx(t), resp.Name, client.KillRequest{})
	if err != nil {
		t.Fatalf("kill: %v", err)
	}
	if kr.Signaled != n-1 || kr.Dequeued != 1 {
		t.Errorf("kill: got signaled %d dequeued %d, want %d and 1", kr.Signaled, kr.Dequeued, n-1)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	for _, in := range job.Instances {
		if in.State != client.InstanceKilled {
			t.Errorf("instance %d: state %s, want killed", in.Index, in.State)
		}
	}
	if job.State != client.JobKilled {
		t.Errorf("job state %s, want killed", job.State)
	}
}

func TestQueuedUntilAStubJoins(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.Job(ctx(t), resp.Name)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	if job.Instances[0].State != client.InstanceQueued {
		t.Fatalf("with no machines the instance is %s, want queued", job.Instances[0].State)
	}
	c.AddStub("late")
	job, err = cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if in := job.Instances[0]; in.State != client.InstanceExited || in.Machine != "late" {
		t.Errorf("got %s on %q, want exited on late", in.State, in.Machine)
	}
}
