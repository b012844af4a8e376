package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestFrozenStubIsSuspect freezes one stub process (SIGSTOP): it stops
// renewing its lease, so within about a second the leader shows its
// machine suspect and places new work on the other machine only; once
// thawed it is up again. Gossip would take several seconds to call it
// dead, and the lease 4 s to expire.
func TestFrozenStubIsSuspect(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 5 processes")
	}
	c, cl := procCluster(t, t.TempDir(), 3, 2)
	frozen, other := c.Stubs[0], c.Stubs[1]
	stateOf := func(name string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ms, err := cl.Machines(ctx)
		if err != nil {
			return "error: " + err.Error()
		}
		for _, m := range ms {
			if m.Name == name {
				return m.State
			}
		}
		return "absent"
	}

	if err := syscall.Kill(frozen.PID(), syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze stub: %v", err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(frozen.PID(), syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	stopped := time.Now()
	testwait.For(t, 10*time.Second, frozen.Name+" suspect", func() bool {
		return stateOf(frozen.Name) == client.MachineSuspect
	})
	t.Logf("frozen stub suspect after %v", time.Since(stopped).Round(10*time.Millisecond))

	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
			Binaries: map[string]string{client.AnyKey: "/bin/true"}, Min: 1,
		}})
		if err != nil {
			cancel()
			t.Fatalf("submit %d: %v", i, err)
		}
		job, err := cl.WaitJob(ctx, fmt.Sprint(sub.ID), client.WaitStarted)
		cancel()
		if err != nil {
			t.Fatalf("wait for job %d: %v", sub.ID, err)
		}
		if m := job.Instances[0].Machine; m != other.Name {
			t.Errorf("job %d placed on %s while %s is suspect, want %s", sub.ID, m, frozen.Name, other.Name)
		}
	}

	thaw()
	testwait.For(t, 15*time.Second, frozen.Name+" up again", func() bool {
		return stateOf(frozen.Name) == client.MachineUp
	})
}
