package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestKillEveryServerLosesNothing SIGKILLs all three servers at once while
// a job runs, lets the job end while no server is up, and starts them
// again on their data directories: every acknowledged job is there, and
// the job's CHILD_TERM, kept in the stub's outbox, arrives with its exit
// status.
func TestKillEveryServerLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and restarts a server group")
	}
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const finished = 10
	var ids []uint64
	for i := range finished {
		sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
			Binaries: map[string]string{client.AnyKey: "/bin/true"}, Min: 1,
		}})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		ids = append(ids, sub.ID)
	}
	for _, id := range ids {
		if _, err := cl.WaitJob(ctx, fmt.Sprint(id), client.WaitDone); err != nil {
			t.Fatalf("wait for job %d: %v", id, err)
		}
	}
	gate := filepath.Join(dir, "go")
	ended := filepath.Join(dir, "ended")
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; touch %s; exit 7", gate, ended)},
		Min:      1,
	}})
	if err != nil {
		t.Fatalf("submit the gated job: %v", err)
	}
	late := fmt.Sprint(sub.ID)
	if _, err := cl.WaitJob(ctx, late, client.WaitStarted); err != nil {
		t.Fatalf("wait for the gated job to run: %v", err)
	}

	for i := range c.Servers {
		if err := c.KillServer(i, syscall.SIGKILL); err != nil {
			t.Fatalf("kill server %d: %v", i, err)
		}
	}
	// The job ends while no server is up: its end can only wait in the
	// stub's outbox.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the gated job to end", func() bool {
		_, err := os.Stat(ended)
		return err == nil
	})
	for i := range c.Servers {
		if err := c.RestartServer(i); err != nil {
			t.Fatalf("restart server %d: %v", i, err)
		}
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}

	job, err := cl.WaitJob(ctx, late, client.WaitDone)
	if err != nil {
		t.Fatalf("wait for the gated job's end after the restart: %v", err)
	}
	if in := job.Instances[0]; in.State != client.InstanceFailed || in.ExitCode != 7 || in.Attempt != 1 {
		t.Errorf("gated job: state %s exit %d attempt %d, want failed, 7, attempt 1", in.State, in.ExitCode, in.Attempt)
	}
	for _, id := range ids {
		job, err := cl.Job(ctx, fmt.Sprint(id))
		if err != nil {
			t.Errorf("job %d after the restart: %v", id, err)
			continue
		}
		if in := job.Instances[0]; in.State != client.InstanceExited || in.ExitCode != 0 {
			t.Errorf("job %d after the restart: %s exit %d, want exited 0", id, in.State, in.ExitCode)
		}
	}
}
