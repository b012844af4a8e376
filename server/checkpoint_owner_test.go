package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
	"github.com/netmgr/netmgr/stub/owner"
)

// TestOwnerVacateCheckpoints: when the owner of the machine running a
// job that checkpoints returns and the job is vacated, the job first gets
// its warning signal (USR1 here, --signal) while suspended, continues,
// writes its checkpoint and exits with its code; the servers keep the
// checkpoint and start the job on the other machine from it, counting no
// restart.
func TestOwnerVacateCheckpoints(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dir := t.TempDir()
	said := filepath.Join(dir, "said")
	monitor := filepath.Join(dir, "monitor.sh")
	writeAtomic(t, said, []byte("wake\n"))
	if err := os.WriteFile(monitor, []byte("#!/bin/sh\ncat "+said+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{LoadMonitor: monitor, MonitorEvery: 100 * time.Millisecond, Interval: 50 * time.Millisecond}
		cfg.VacateAfter = time.Second
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })

	ledger := filepath.Join(dir, "ledger")
	spec := shJob(`mkdir -p state; n=$(cat state/counter 2>/dev/null || echo 0)
echo "$NETMGR_ATTEMPT $NETMGR_MACHINE start $n" >> `+ledger+`
trap 'echo $n > state/counter; echo "$NETMGR_ATTEMPT $NETMGR_MACHINE kept $n" >> `+ledger+`; exit 85' USR1
while true; do n=$((n+1)); sleep 0.05; done`, "")
	spec.Checkpoint, spec.CheckpointExit = []string{"state"}, 85
	spec.WarnSignal, spec.WarnLeadS = "USR1", 60
	job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	testwait.For(t, 15*time.Second, "the job counting on alpha", func() bool {
		j, err := cl.Job(ctx(t), job.Name)
		return err == nil && j.Instances[0].State == client.InstanceRunning && j.Instances[0].Machine == "alpha"
	})
	time.Sleep(300 * time.Millisecond) // let it count: the value kept is then above 0, whatever it is
	c.AddStub("beta")                  // somewhere to go

	writeAtomic(t, said, []byte("sleep owner at the desk\n"))
	testwait.For(t, 30*time.Second, "the job running again on beta from its checkpoint", func() bool {
		j, err := cl.Job(ctx(t), job.Name)
		in := j.Instances[0]
		return err == nil && in.Attempt == 2 && in.Machine == "beta" && in.State == client.InstanceRunning &&
			strings.Contains(readText(ledger), "2 beta start ")
	})
	j, err := cl.Job(ctx(t), job.Name)
	if err != nil {
		t.Fatal(err)
	}
	in := j.Instances[0]
	if in.Restarts != 0 || in.Checkpoint == nil || in.Checkpoint.Attempt != 1 || in.Checkpoint.Machine != "alpha" {
		t.Errorf("attempt 2: %d restarts counted, checkpoint %+v; want none counted and attempt 1's from alpha", in.Restarts, in.Checkpoint)
	}
	var kept, started string
	for _, l := range strings.Split(readText(ledger), "\n") {
		if v, ok := strings.CutPrefix(l, "1 alpha kept "); ok {
			kept = v
		}
		if v, ok := strings.CutPrefix(l, "2 beta start "); ok {
			started = v
		}
	}
	if kept == "" || kept == "0" || started != kept {
		t.Errorf("attempt 1 kept %q, attempt 2 started from %q; want the same value above 0:\n%s", kept, started, readText(ledger))
	}
	if _, err := cl.Kill(ctx(t), job.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

// readText returns the content of path, "" when it cannot be read.
func readText(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
