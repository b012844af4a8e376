package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestCrashedMachineGoesDown kills a whole machine (stub, supervisor and a
// job without a restart policy) at once. Its lease expires first: the
// machine is unreachable and the instance unknown, never restarted. When
// gossip gives the machine up it goes down and the instance is lost.
func TestCrashedMachineGoesDown(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and waits for gossip to give a machine up (about 15 s)")
	}
	c, cl := procCluster(t, t.TempDir(), 3, 2)
	victim := c.Stubs[0].Name
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"},
		Min: 1, Machines: []string{victim},
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ref := fmt.Sprint(sub.ID)
	if _, err := cl.WaitJob(ctx, ref, client.WaitStarted); err != nil {
		t.Fatalf("wait for the job to run: %v", err)
	}

	if _, err := c.KillStubMachine(0); err != nil {
		t.Fatalf("kill machine %s: %v", victim, err)
	}
	state := func() (machine, instance string, attempt uint64) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ms, err := cl.Machines(ctx)
		if err != nil {
			return "", "", 0
		}
		for _, m := range ms {
			if m.Name == victim {
				machine = m.State
			}
		}
		job, err := cl.Job(ctx, ref)
		if err != nil || len(job.Instances) != 1 {
			return machine, "", 0
		}
		return machine, job.Instances[0].State, job.Instances[0].Attempt
	}
	var sawUnknown bool
	testwait.For(t, 60*time.Second, victim+" down and its instance lost", func() bool {
		m, in, attempt := state()
		if attempt != 1 {
			t.Fatalf("the instance got attempt %d: work without a restart policy must never run again", attempt)
		}
		sawUnknown = sawUnknown || in == client.InstanceUnknown
		return m == client.MachineDown && in == client.InstanceLost
	})
	if !sawUnknown {
		t.Logf("the instance went to lost without being seen unknown (gossip was as fast as the lease)")
	}
}
