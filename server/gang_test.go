package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// gangJob is a gang of n, one instance a machine, running script.
func gangJob(script string, n int) client.JobSpec {
	s := shSpec(script, n)
	s.Gang = true
	s.Unique = true
	return s
}

// instancesIn reports how many of job's instances are in state.
func instancesIn(job client.Job, state string) int {
	n := 0
	for _, in := range job.Instances {
		if in.State == state {
			n++
		}
	}
	return n
}

// TestGangWaitsWholeThenStarts: three machines, one filled by another
// job. A gang of three, one a machine, holds no machine while it waits,
// netstatus --why says what it needs, and once the third machine frees
// all three start; each instance reads the gang's machines from its
// environment and its host file.
func TestGangWaitsWholeThenStarts(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 3, "alpha", "beta", "gamma")
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	var slots int
	for _, m := range ms {
		if m.Name == "gamma" {
			slots = m.CPUs
		}
	}
	blocker := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}, Min: slots, Machines: []string{"gamma"}}
	b, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: blocker})
	if err != nil {
		t.Fatalf("submit blocker: %v", err)
	}
	testwait.For(t, 15*time.Second, "gamma full", func() bool {
		job, err := cl.Job(ctx(t), b.Name)
		return err == nil && instancesIn(job, client.InstanceRunning) == slots
	})

	out := t.TempDir()
	script := `{ echo "$NETMGR_GANG_RANK $NETMGR_GANG_SIZE $NETMGR_GANG_HOSTS $NETMGR_MACHINE"; cat "$NETMGR_GANG_HOSTFILE"; } > ` + out + `/rank.$NETMGR_INSTANCE`
	g, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: gangJob(script, 3)})
	if err != nil {
		t.Fatalf("submit gang: %v", err)
	}
	var why []client.WhyInstance
	testwait.For(t, 15*time.Second, "the gang's why", func() bool {
		why, err = cl.Why(ctx(t), g.Name)
		return err == nil && len(why) == 3 && strings.Contains(why[0].Reason, "needs 3 machine slots at once, 2 could run it now")
	})
	job, err := cl.Job(ctx(t), g.Name)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	if q := instancesIn(job, client.InstanceQueued); q != 3 {
		t.Fatalf("gang waiting: %d of 3 instances queued, want all (it must hold no machine): %+v", q, job.Instances)
	}
	if !strings.Contains(why[0].Reason, "set aside") {
		t.Errorf("why %q, want it to say the machines are set aside", why[0].Reason)
	}

	if _, err := cl.Kill(ctx(t), b.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill blocker: %v", err)
	}
	job, err = cl.WaitJob(ctx(t), g.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait gang: %v", err)
	}
	if job.State != client.JobDone {
		t.Fatalf("gang state %s, want done: %+v", job.State, job.Instances)
	}
	hosts := make([]string, 3)
	for _, in := range job.Instances {
		hosts[in.Index] = in.Machine
	}
	for _, in := range job.Instances {
		data, err := os.ReadFile(filepath.Join(out, "rank."+strconv.Itoa(in.Index)))
		if err != nil {
			t.Fatalf("instance %d left no file: %v", in.Index, err)
		}
		want := strconv.Itoa(in.Index) + " 3 " + strings.Join(hosts, ",") + " " + in.Machine + "\n" + strings.Join(hosts, "\n") + "\n"
		if string(data) != want {
			t.Errorf("instance %d wrote %q, want %q", in.Index, data, want)
		}
	}
}

// TestGangRestartsTogether: killing one instance of a running gang with a
// restart policy stops the others and starts all three again as attempt
// 2, and no instance's attempt 2 starts before its attempt 1 ended.
func TestGangRestartsTogether(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 3, "alpha", "beta", "gamma")
	out := t.TempDir()
	// Each attempt logs its start and, on SIGTERM, its end.
	script := `log=` + out + `/log.$NETMGR_INSTANCE; trap 'echo end $NETMGR_ATTEMPT >> $log; exit 0' TERM; ` +
		`echo start $NETMGR_ATTEMPT >> $log; sleep 600 & wait`
	spec := gangJob(script, 3)
	spec.Restart = client.RestartOnFailure
	g, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit gang: %v", err)
	}
	var job client.Job
	running := func(attempt uint64) func() bool {
		return func() bool {
			job, err = cl.Job(ctx(t), g.Name)
			if err != nil {
				return false
			}
			for _, in := range job.Instances {
				if in.State != client.InstanceRunning || in.Attempt != attempt {
					return false
				}
				if data, _ := os.ReadFile(filepath.Join(out, "log."+strconv.Itoa(in.Index))); !strings.Contains(string(data), "start "+strconv.FormatUint(attempt, 10)) {
					return false
				}
			}
			return true
		}
	}
	testwait.For(t, 15*time.Second, "the gang running, attempt 1", running(1))
	victim := job.Instances[1]
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill instance 1 (pid %d): %v", victim.PID, err)
	}
	testwait.For(t, 30*time.Second, "the gang running again, attempt 2", running(2))
	for _, in := range job.Instances {
		data, err := os.ReadFile(filepath.Join(out, "log."+strconv.Itoa(in.Index)))
		if err != nil {
			t.Fatalf("instance %d: %v", in.Index, err)
		}
		// A signal is delivered at least once: a second TERM may run the
		// trap again before the shell exits, so repeats are collapsed.
		lines := slices.Compact(strings.Split(strings.TrimSpace(string(data)), "\n"))
		want := []string{"start 1", "end 1", "start 2"}
		if in.Index == 1 {
			want = []string{"start 1", "start 2"} // killed outright: no end logged
		}
		if !slices.Equal(lines, want) {
			t.Errorf("instance %d logged %q, want %q (attempt 2 only after attempt 1 ended)", in.Index, data, want)
		}
	}
	full, err := cl.Job(ctx(t), g.Name)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	for _, in := range full.Instances {
		if len(in.History) != 1 {
			t.Errorf("instance %d: %d earlier attempts, want 1", in.Index, len(in.History))
			continue
		}
		if old := in.History[0]; in.StartedAt.Before(old.EndedAt) {
			t.Errorf("instance %d: attempt 2 started %v, before attempt 1 ended %v", in.Index, in.StartedAt, old.EndedAt)
		}
	}
	if _, err := cl.Kill(ctx(t), g.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill gang: %v", err)
	}
	if _, err := cl.WaitJob(ctx(t), g.Name, client.WaitDone); err != nil {
		t.Fatalf("wait gang: %v", err)
	}
}

// policiesDB declares two 2-slot machines and queues of three policies.
const policiesDB = `machine alpha = {nprocs=2}
machine beta = {nprocs=2}
add_q EXCL = {policy=dedicated}
add_q MPI = {policy=gang, priority=5}
admin_id root
allow_root_jobs
`

// TestPoliciesSharePool: a dedicated queue, a gang queue and the default
// (backfill) share two machines. Nobody's dedicated job keeps root's work
// off its machine, even off its free slot; a job of the gang queue is a
// gang and waits whole; when the dedicated job ends, the gang (first by
// its queue's priority) takes that machine in one placement while root's
// last default instance still waits.
func TestPoliciesSharePool(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha", "beta")
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "policies.db", Text: policiesDB}); err != nil {
		t.Fatalf("load: %v", err)
	}
	sleep := func(n int, q string) client.JobSpec {
		return client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}, Min: n, Queue: q}
	}
	nobody := c.ClientAs("nobody")
	excl, err := nobody.Submit(ctx(t), client.SubmitRequest{Spec: sleep(1, "EXCL")})
	if err != nil {
		t.Fatalf("submit dedicated: %v", err)
	}
	x := waitRunning(t, cl, excl.Name, 1).Instances[0].Machine
	wide, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: sleep(3, "")})
	if err != nil {
		t.Fatalf("submit default: %v", err)
	}
	job := waitRunning(t, cl, wide.Name, 2)
	for _, in := range job.Instances {
		if in.State == client.InstanceRunning && in.Machine == x {
			t.Fatalf("root's instance %d runs on %s beside nobody's dedicated job", in.Index, x)
		}
	}
	mpi, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: sleep(2, "MPI")})
	if err != nil {
		t.Fatalf("submit to the gang queue: %v", err)
	}
	testwait.For(t, 15*time.Second, "the gang queue's job to wait as a gang", func() bool {
		why, err := cl.Why(ctx(t), mpi.Name)
		return err == nil && len(why) == 2 && strings.Contains(why[0].Reason, "gang of 2")
	})
	if job, err := cl.Job(ctx(t), mpi.Name); err != nil || !job.Spec.Gang || instancesIn(job, client.InstanceQueued) != 2 {
		t.Fatalf("gang queue's job: %+v, %v; want a gang with both instances queued", job, err)
	}
	if _, err := nobody.Kill(ctx(t), excl.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill dedicated: %v", err)
	}
	job = waitRunning(t, cl, mpi.Name, 2)
	for _, in := range job.Instances {
		if in.Machine != x {
			t.Errorf("gang instance %d on %s, want both on the freed %s", in.Index, in.Machine, x)
		}
	}
	if job, err := cl.Job(ctx(t), wide.Name); err != nil || instancesIn(job, client.InstanceQueued) != 1 {
		t.Errorf("root's default job: %v; want its third instance still queued behind the gang", err)
	}
	for _, ref := range []string{wide.Name, mpi.Name} {
		if _, err := cl.Kill(ctx(t), ref, client.KillRequest{}); err != nil {
			t.Fatalf("kill %s: %v", ref, err)
		}
	}
}

// TestGangReservationSurvivesLeaderChange: a gang waiting for its third
// machine has two set aside; after the leader is cut off, the new leader
// computes the same reservation from the replicated state (a later job
// without a run limit waits behind the gang), and starts the gang whole
// when the third machine frees.
func TestGangReservationSurvivesLeaderChange(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha", "beta", "gamma")
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	slots := 0
	for _, m := range ms {
		if m.Name == "gamma" {
			slots = m.CPUs
		}
	}
	sleep := func(n int) client.JobSpec {
		return client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}, Min: n}
	}
	blockSpec := sleep(slots)
	blockSpec.Machines = []string{"gamma"}
	block, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: blockSpec})
	if err != nil {
		t.Fatalf("submit blocker: %v", err)
	}
	waitRunning(t, cl, block.Name, slots)
	gangSpec := sleep(3)
	gangSpec.Gang, gangSpec.Unique = true, true
	g, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: gangSpec})
	if err != nil {
		t.Fatalf("submit gang: %v", err)
	}
	setAside := func(cl *client.Client) func() bool {
		return func() bool {
			why, err := cl.Why(ctx(t), g.Name)
			return err == nil && len(why) == 3 && strings.Contains(why[0].Reason, "set aside")
		}
	}
	testwait.For(t, 15*time.Second, "the gang to set machines aside", setAside(cl))

	old := c.WaitLeader()
	c.Isolate(old)
	defer c.Heal()
	c.WaitLeader(old)
	var rest []int
	for i := range 3 {
		if i != old {
			rest = append(rest, i)
		}
	}
	rcl := c.Client(rest...)
	small, err := rcl.Submit(ctx(t), client.SubmitRequest{Spec: sleep(1)})
	if err != nil {
		t.Fatalf("submit small job to the new leader: %v", err)
	}
	testwait.For(t, 20*time.Second, "the new leader to keep the gang's machines aside", func() bool {
		why, err := rcl.Why(ctx(t), small.Name)
		return err == nil && len(why) == 1 && strings.Contains(why[0].Reason, "waiting behind job") && setAside(rcl)()
	})
	if job, err := rcl.Job(ctx(t), small.Name); err != nil || instancesIn(job, client.InstanceQueued) != 1 {
		t.Fatalf("small job %+v, %v; want it queued behind the gang", job, err)
	}
	if _, err := rcl.Kill(ctx(t), block.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill blocker: %v", err)
	}
	waitRunning(t, rcl, g.Name, 3)
	for _, ref := range []string{g.Name, small.Name} {
		if _, err := rcl.Kill(ctx(t), ref, client.KillRequest{}); err != nil {
			t.Fatalf("kill %s: %v", ref, err)
		}
	}
}
