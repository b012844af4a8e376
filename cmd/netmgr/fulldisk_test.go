package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestFullExecDirDrainsMachine is the black hole of a full exec dir, on
// real processes (three servers, two stubs): stub1's exec dir is a small
// tmpfs, and a job fills it. A job of eight short instances submitted
// next must not lose one to the full machine: those placed there go back
// to the queue uncounted and run on the other. stub1 drains itself, with
// the reason in netstatus -m, and takes work again once the file is gone.
func TestFullExecDirDrainsMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs a cluster")
	}
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 2)
	full := c.Stubs[0]
	// stub1 gets a tmpfs of 384 KiB as its exec dir, before any job.
	if _, err := c.KillStubMachine(0); err != nil {
		t.Fatal(err)
	}
	servertest.MountTmpfsAt(t, full.ExecDir, 384<<10, 0)
	if err := c.RestartStub(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	machine := func(name string) client.Machine {
		t.Helper()
		ms, err := cl.Machines(ctx)
		if err != nil {
			t.Fatalf("machines: %v", err)
		}
		for _, m := range ms {
			if m.Name == name {
				return m
			}
		}
		t.Fatalf("no machine %s in %+v", name, ms)
		return client.Machine{}
	}
	testwait.For(t, 60*time.Second, full.Name+" up on its tmpfs", func() bool {
		m := machine(full.Name)
		return m.State == client.MachineUp && m.Problem == ""
	})

	// The filler writes more than fits and ends well: the file stays.
	filler, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", "head -c 1048576 /dev/zero > fill; exit 0"},
		Min:      1,
		Machines: []string{full.Name},
	}})
	if err != nil {
		t.Fatalf("submit the filler: %v", err)
	}
	if j, err := cl.WaitJob(ctx, fmt.Sprint(filler.ID), client.WaitDone); err != nil || j.State != client.JobDone {
		t.Fatalf("filler: %v, state %q; want done", err, j.State)
	}

	job, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", "echo hello from $NETMGR_MACHINE"},
		Min:      8,
	}})
	if err != nil {
		t.Fatalf("submit the eight: %v", err)
	}
	j, err := cl.WaitJob(ctx, fmt.Sprint(job.ID), client.WaitDone)
	if err != nil {
		t.Fatalf("wait for the eight: %v", err)
	}
	requeued := 0
	for _, in := range j.Instances {
		if in.State != client.InstanceExited || in.ExitCode != 0 || in.Restarts != 0 {
			t.Errorf("instance %d: %s exit %d on %s after %d restarts (%s), want exited(0) with none counted",
				in.Index, in.State, in.ExitCode, in.Machine, in.Restarts, in.Error)
		}
		if in.Attempt > 1 {
			requeued++
		}
	}
	t.Logf("the eight: %d went back to the queue from %s uncounted", requeued, full.Name)

	testwait.For(t, 30*time.Second, full.Name+" draining with the reason", func() bool {
		m := machine(full.Name)
		return m.State == client.MachineDraining && m.Problem == "exec dir full: 0 B free"
	})
	status := exec.Command(netmgrBinary(t), "status", "-m")
	status.Env = append(os.Environ(), c.Env()...)
	out, err := status.CombinedOutput()
	if err != nil {
		t.Fatalf("netstatus -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "draining (exec dir full: 0 B free)") {
		t.Errorf("netstatus -m does not show the reason:\n%s", out)
	}
	t.Logf("netstatus -m:\n%s", out)

	if err := os.Remove(filepath.Join(attemptDirIn(t, full.ExecDir, fmt.Sprintf("%d.0.1", filler.ID)), "fill")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, full.Name+" taking work again", func() bool {
		m := machine(full.Name)
		return m.State == client.MachineUp && m.Problem == ""
	})
	again, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/true"}, Min: 1, Machines: []string{full.Name},
	}})
	if err != nil {
		t.Fatalf("submit to %s: %v", full.Name, err)
	}
	if j, err := cl.WaitJob(ctx, fmt.Sprint(again.ID), client.WaitDone); err != nil || j.State != client.JobDone {
		t.Errorf("a job on %s once it is healthy: %v, state %q; want done", full.Name, err, j.State)
	}
}
