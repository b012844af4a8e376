package server_test

import (
	"bufio"
	"errors"
	"net/http"
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

func setQueue(t *testing.T, cl *client.Client, q client.Queue) {
	t.Helper()
	if _, err := cl.SetQueue(ctx(t), q); err != nil {
		t.Fatalf("set queue %s: %v", q.Name, err)
	}
}

func shJob(script string, queue string) client.JobSpec {
	return client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", script}, Queue: queue}
}

// TestMaxActiveHoldsUnderABurst submits 200 short jobs to a queue with
// nq_maxactive=2 on machines with 4 slots in all, and reads the ledger the
// jobs append to: never more than 2 ran at once, and all 200 ran.
func TestMaxActiveHoldsUnderABurst(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha", "beta")
	setQueue(t, cl, client.Queue{Name: "narrow", MaxActive: 2})
	ledger := filepath.Join(t.TempDir(), "ledger")
	script := `echo "start $NETMGR_JOB_ID" >> ` + ledger + `; sleep 0.05; echo "end $NETMGR_JOB_ID" >> ` + ledger
	const n = 200
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(script, "narrow")})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("submit: %v", err)
		}
	}
	testwait.For(t, 60*time.Second, "200 jobs done", func() bool {
		qs, err := cl.Queues(ctx(t))
		if err != nil {
			return false
		}
		for _, q := range qs {
			if q.Name == "narrow" {
				return q.Jobs == 0
			}
		}
		return false
	})
	f, err := os.Open(ledger)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	defer f.Close()
	running, most, starts := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch strings.Fields(sc.Text())[0] {
		case "start":
			running++
			starts++
			most = max(most, running)
		case "end":
			running--
		}
	}
	if starts != n || most > 2 {
		t.Errorf("ledger: %d starts, at most %d running at once; want %d and at most 2", starts, most, n)
	}
	if most < 2 {
		t.Errorf("at most %d ran at once; the queue allows 2 and the machines 4", most)
	}
}

// TestMaxRunWarnsThenKills gives a queue a 1 s run limit: a job that traps
// SIGTERM records the warning, and its end says why.
func TestMaxRunWarnsThenKills(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	setQueue(t, cl, client.Queue{Name: "short", MaxRunSeconds: 1})
	dir := t.TempDir()
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(
		`trap 'echo TERM > `+dir+`/warned; exit 7' TERM; sleep 3600 & wait`, "short")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	in := job.Instances[0]
	if in.State != client.InstanceKilled || !strings.Contains(in.Reason, "timeout: run limit of 1s exceeded") {
		t.Errorf("got %s reason %q, want killed for the run limit", in.State, in.Reason)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "warned")); err != nil || strings.TrimSpace(string(data)) != "TERM" {
		t.Errorf("the job's trap recorded %q (%v), want TERM before the kill", data, err)
	}
}

// TestMaxMemRefusesAndKills: a job asking more than nq_maxmem is refused
// at submit; an instance that grows past it is killed by its stub.
func TestMaxMemRefusesAndKills(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	setQueue(t, cl, client.Queue{Name: "small", MaxMemMB: 20})
	big := shJob("true", "small")
	big.MemoryMB = 64
	_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: big})
	if err == nil || !strings.Contains(err.Error(), "allows 20 MB") {
		t.Errorf("got %v, want the 64 MB job refused naming the 20 MB limit", err)
	}
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(`x=$(head -c 60000000 /dev/zero | tr "\0" a); sleep 60`, "small")})
	if err != nil {
		t.Fatalf("submit hog: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if in := job.Instances[0]; in.State != client.InstanceKilled || !strings.Contains(in.Reason, "memory: memory limit of 20 MB exceeded") {
		t.Errorf("got %s reason %q, want killed for the memory limit", in.State, in.Reason)
	}
}

func TestMaxSizeRefusesSubmits(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	setQueue(t, cl, client.Queue{Name: "tiny", MaxSize: 2})
	for range 2 {
		if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("true", "tiny")}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	}
	_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("true", "tiny")})
	if err == nil || !strings.Contains(err.Error(), "queue tiny is full") {
		t.Errorf("got %v, want the third submit refused: queue full", err)
	}
}

// TestReservationKeepsOthersOff reserves the only machine for the test's
// user: another user's job waits, saying why, and runs after unreserve.
func TestReservationKeepsOthersOff(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 1, "alpha")
	r, err := cl.Reserve(ctx(t), client.ReserveRequest{Machines: []string{"alpha"}, For: time.Hour})
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	ms, err := cl.Machines(ctx(t))
	if err != nil || ms[0].ReservedBy != servertest.CurrentUser(t) {
		t.Fatalf("machines %+v (%v), want alpha reserved by %s", ms, err, servertest.CurrentUser(t))
	}
	other := c.ClientAs("nobody")
	resp, err := other.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}}})
	if err != nil {
		t.Fatalf("submit as nobody: %v", err)
	}
	why, err := cl.Why(ctx(t), resp.Name)
	if err != nil || len(why) != 1 || !strings.Contains(why[0].Reason, "reserved by another user") {
		t.Fatalf("why %+v (%v), want the job waiting on the reservation", why, err)
	}
	// The reserver's own job runs there meanwhile.
	mine, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}}})
	if err != nil {
		t.Fatalf("submit as owner: %v", err)
	}
	if job, err := cl.WaitJob(ctx(t), mine.Name, client.WaitDone); err != nil || job.Instances[0].State != client.InstanceExited {
		t.Fatalf("owner's job: %+v (%v), want it run on the reserved machine", job.Instances, err)
	}
	if _, err := other.Unreserve(ctx(t), client.UnreserveRequest{ID: r.ID}); err == nil {
		t.Errorf("another user ended the reservation; want it refused")
	}
	if _, err := cl.Unreserve(ctx(t), client.UnreserveRequest{}); err != nil {
		t.Fatalf("unreserve: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil || job.Instances[0].State != client.InstanceExited {
		t.Errorf("nobody's job after unreserve: %+v (%v), want exited", job.Instances, err)
	}
}

// TestSuspendResumeStopsAndContinues suspends a counting process: its
// count stops while suspended and goes on after resume.
func TestSuspendResumeStopsAndContinues(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	count := filepath.Join(t.TempDir(), "count")
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(
		`i=0; while true; do i=$((i+1)); echo $i > `+count+`; sleep 0.02; done`, "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	read := func() int {
		data, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
	testwait.For(t, 10*time.Second, "counting", func() bool { return read() > 5 })
	if r, err := cl.Suspend(ctx(t), resp.Name); err != nil || r.Affected != 1 {
		t.Fatalf("suspend: %+v %v", r, err)
	}
	// Stopped: the count settles and then holds across several reads.
	var stopped int
	testwait.For(t, 10*time.Second, "count stops", func() bool {
		a := read()
		time.Sleep(200 * time.Millisecond)
		stopped = read()
		return a == stopped
	})
	job, err := cl.Job(ctx(t), resp.Name)
	if err != nil || job.Instances[0].State != client.InstanceSuspended {
		t.Fatalf("state %+v (%v), want suspended", job.Instances, err)
	}
	if r, err := cl.Resume(ctx(t), resp.Name); err != nil || r.Affected != 1 {
		t.Fatalf("resume: %+v %v", r, err)
	}
	testwait.For(t, 10*time.Second, "count resumes", func() bool { return read() > stopped+5 })
	if _, err := cl.Kill(ctx(t), resp.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

func TestOnlyOwnerOrAdminControlsAJob(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 1, "alpha")
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	other := c.ClientAs("nobody")
	var apiErr *client.APIError
	for name, call := range map[string]func() error{
		"kill":    func() error { _, err := other.Kill(ctx(t), resp.Name, client.KillRequest{}); return err },
		"suspend": func() error { _, err := other.Suspend(ctx(t), resp.Name); return err },
		"restart": func() error { _, err := other.Restart(ctx(t), resp.Name); return err },
	} {
		if err := call(); !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
			t.Errorf("%s by another user: got %v, want 403", name, err)
		}
	}
	if _, err := cl.Kill(ctx(t), resp.Name, client.KillRequest{}); err != nil {
		t.Errorf("kill by the owner: %v", err)
	}
}

func TestRestartStartsANewAttempt(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	waitRunning(t, cl, resp.Name, 1)
	if r, err := cl.Restart(ctx(t), resp.Name); err != nil || r.Affected != 1 {
		t.Fatalf("restart: %+v %v", r, err)
	}
	testwait.For(t, 20*time.Second, "attempt 2 running", func() bool {
		job, err := cl.Job(ctx(t), resp.Name)
		return err == nil && job.Instances[0].Attempt == 2 && job.Instances[0].State == client.InstanceRunning
	})
	qs, err := cl.Queues(ctx(t))
	if err != nil || !slices.ContainsFunc(qs, func(q client.Queue) bool { return q.Name == client.DefaultQueue && q.Running == 1 }) {
		t.Errorf("queues %+v (%v), want the default queue running 1", qs, err)
	}
	if _, err := cl.Kill(ctx(t), resp.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}
