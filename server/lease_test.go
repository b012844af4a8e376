package server_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
)

// ledgerEntry is one line a job appended: start or end of an attempt on a
// machine, with the time in nanoseconds.
type ledgerEntry struct {
	what, machine, attempt string
	at                     time.Time
}

func readLedger(t *testing.T, path string) []ledgerEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	defer f.Close()
	var out []ledgerEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			continue
		}
		ns, _ := time.ParseDuration(fs[3] + "ns")
		out = append(out, ledgerEntry{fs[0], fs[1], fs[2], time.Unix(0, int64(ns))})
	}
	return out
}

// TestMachineLossRestartsElsewhereWithoutOverlap runs a restartable and a
// non-restartable job on beta, then loses beta: its stub stops and its jobs
// die with it. The restartable instance runs again on alpha only after its
// first attempt ended, judged by the ledger the job writes; the other is
// shown unknown, then lost, and never restarted.
func TestMachineLossRestartsElsewhereWithoutOverlap(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for a lease to expire (several seconds); run without -short")
	}
	// Only beta at first, so both jobs land there; alpha joins later.
	c, cl := poolWithStubs(t, 1, "beta")
	dir := t.TempDir()
	alive := filepath.Join(dir, "beta-alive")
	if err := os.WriteFile(alive, nil, 0o644); err != nil {
		t.Fatalf("marker: %v", err)
	}
	ledger := filepath.Join(dir, "ledger")
	// On beta the job lives while beta's marker exists; elsewhere it runs on.
	script := `now() { date +%s%N; }; echo "start $NETMGR_MACHINE $NETMGR_ATTEMPT $(now)" >> ` + ledger + `
while [ "$NETMGR_MACHINE" != beta ] || [ -e ` + alive + ` ]; do sleep 0.05; done
echo "end $NETMGR_MACHINE $NETMGR_ATTEMPT $(now)" >> ` + ledger
	restartable := shJob(script, "")
	restartable.Restart = client.RestartAlways
	r, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: restartable})
	if err != nil {
		t.Fatalf("submit restartable: %v", err)
	}
	plain := shJob(`while [ -e `+alive+` ]; do sleep 0.05; done`, "")
	p, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: plain})
	if err != nil {
		t.Fatalf("submit plain: %v", err)
	}
	waitRunning(t, cl, r.Name, 1)
	waitRunning(t, cl, p.Name, 1)
	beta := c.Stubs[0]
	c.AddStub("alpha")
	testwait.For(t, 15*time.Second, "alpha up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 2
	})

	// The leader declares beta lost within seconds only once beta has
	// shown it counts a pool of two: knowing only itself, beta would keep
	// its work through an outage of the servers (see expirable in server/lease/expiry).
	waitProvenPool(t, c, beta, 2)

	// Lose beta: its stub stops and its jobs die with the machine.
	lost := time.Now()
	_ = beta.Shutdown()
	if err := os.Remove(alive); err != nil {
		t.Fatalf("lose beta: %v", err)
	}

	var job client.Job
	testwait.For(t, 20*time.Second, "restartable job running on alpha", func() bool {
		job, err = cl.Job(ctx(t), r.Name)
		return err == nil && job.Instances[0].Machine == "alpha" && job.Instances[0].State == client.InstanceRunning
	})
	t.Logf("machine loss to running elsewhere: %v", time.Since(lost).Round(10*time.Millisecond))
	if in := job.Instances[0]; in.Attempt != 2 || in.Restarts != 0 {
		t.Errorf("got attempt %d restarts %d, want attempt 2 not counted as a restart", in.Attempt, in.Restarts)
	}
	// Running means forked: the job's shell may not have written its
	// first line yet.
	var (
		entries                 []ledgerEntry
		endOnBeta, startOnAlpha time.Time
	)
	testwait.For(t, 10*time.Second, "attempt 2's start in the ledger", func() bool {
		entries = readLedger(t, ledger)
		for _, e := range entries {
			switch {
			case e.what == "end" && e.machine == "beta":
				endOnBeta = e.at
			case e.what == "start" && e.machine == "alpha":
				startOnAlpha = e.at
			}
		}
		return !startOnAlpha.IsZero()
	})
	if endOnBeta.IsZero() || startOnAlpha.IsZero() || !startOnAlpha.After(endOnBeta) {
		t.Errorf("ledger %+v: attempt 2 on alpha must start after attempt 1 on beta ended", entries)
	}

	pj, err := cl.Job(ctx(t), p.Name)
	if err != nil {
		t.Fatalf("plain job: %v", err)
	}
	if st := pj.Instances[0].State; st != client.InstanceUnknown && st != client.InstanceLost {
		t.Errorf("non-restartable instance on the lost machine is %s, want unknown or lost", st)
	}
	if pj.Instances[0].Attempt != 1 {
		t.Errorf("non-restartable instance got attempt %d, want it never restarted", pj.Instances[0].Attempt)
	}
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	for _, m := range ms {
		if m.Name == "beta" && m.State == client.MachineUp {
			t.Errorf("lost machine beta still shown up")
		}
	}
}

// waitProvenPool waits until the leader knows that st counts a pool of
// size machines.
func waitProvenPool(t *testing.T, c *servertest.Cluster, st *stub.Stub, size int) {
	t.Helper()
	sc := c.StubClient(st.HTTPAddr())
	testwait.For(t, 15*time.Second, fmt.Sprintf("the leader knows the stub counts %d machines", size), func() bool {
		s, err := sc.OutageStatement(ctx(t))
		return err == nil && s.ProvenPool == size
	})
}

// TestElectionDoesNotStopJobs cuts the leader off: a new leader is elected
// while stubs keep renewing their leases, and a restartable job keeps its
// first attempt throughout.
func TestElectionDoesNotStopJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits past a lease length; run without -short")
	}
	c, cl := poolWithStubs(t, 3, "alpha")
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}, Restart: client.RestartAlways}
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	waitRunning(t, cl, resp.Name, 1)
	old := c.WaitLeader()
	c.Isolate(old)
	c.WaitLeader(old)
	// Past a whole lease and its margin: nothing may have restarted.
	testwait.Holds(t, 5*time.Second, "attempt 1 running", func() bool {
		job, err := cl.Job(ctx(t), resp.Name)
		if err == nil && (job.Instances[0].Attempt != 1 || job.Instances[0].State != client.InstanceRunning) {
			t.Fatalf("after the election the instance is attempt %d %s, want attempt 1 running", job.Instances[0].Attempt, job.Instances[0].State)
		}
		return true
	})
	c.Heal()
	if _, err := cl.Kill(ctx(t), resp.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}
