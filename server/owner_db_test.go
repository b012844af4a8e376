package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
	"github.com/netmgr/netmgr/stub/owner"
)

// ownerDevice makes a fake input device file whose last use is an hour
// ago, and returns it and a func that uses it now.
func ownerDevice(t *testing.T) (string, func()) {
	t.Helper()
	dev := filepath.Join(t.TempDir(), "event0")
	writeAtomic(t, dev, nil)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dev, old, old); err != nil {
		t.Fatal(err)
	}
	return dev, func() {
		if err := os.Chtimes(dev, time.Now(), old); err != nil {
			t.Error(err)
		}
	}
}

// loadDB loads text as the cluster's database, keeping root's jobs
// allowed as the test cluster's own database does.
func loadDB(t *testing.T, cl *client.Client, text string) {
	t.Helper()
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "owner.db", Text: "allow_root_jobs\n" + text}); err != nil {
		t.Fatalf("load database: %v", err)
	}
}

// runningPID waits for job name's first instance to run and returns its
// pid.
func runningPID(t *testing.T, cl *client.Client, name string) int {
	t.Helper()
	pid := 0
	testwait.For(t, 15*time.Second, name+" running", func() bool {
		j, err := cl.Job(ctx(t), name)
		if err != nil || j.Instances[0].State != client.InstanceRunning {
			return false
		}
		pid = j.Instances[0].PID
		return pid != 0
	})
	return pid
}

// TestOwnerSettingsFromDatabase: a stub started with no owner-policy
// flag but the input devices to watch learns sleep_on_input from the
// database's declaration of its machine's mtype, with its next lease
// renewal. Using the device puts the machine to sleep and stops the job
// running there (state T, its count holds); once the device rests for
// sleep_on_input the machine wakes and the job counts on. A database
// without the setting turns the policy off again.
func TestOwnerSettingsFromDatabase(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dev, use := ownerDevice(t)
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{InputGlobs: []string{dev}, Interval: 50 * time.Millisecond}
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
	loadDB(t, cl, "mtype desk = {sleep_on_input=2s}\nmachine alpha = desk\n")

	count := filepath.Join(t.TempDir(), "count")
	job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(countScript(count), "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	pid := runningPID(t, cl, job.Name)
	read := counter(count)
	testwait.For(t, 15*time.Second, "counting", func() bool { return read() > 5 })

	// The database's setting arrives with a renewal (every second or so):
	// use the device until the job stops.
	used := time.Now()
	testwait.For(t, 15*time.Second, "job stopped by the database's sleep_on_input", func() bool {
		use()
		return groupStopped(pid)
	})
	t.Logf("database loaded to job suspended: %v", time.Since(used))
	testwait.For(t, 10*time.Second, "alpha asleep", func() bool {
		m := machineOf(t, cl, "alpha")
		return m.State == client.MachineAsleep && m.Asleep != ""
	})
	held := read()
	time.Sleep(200 * time.Millisecond) // the count must hold while stopped
	if n := read(); n != held {
		t.Fatalf("count went from %d to %d while the job was stopped", held, n)
	}

	// Untouched for 2 s, the machine wakes and the job counts on.
	testwait.For(t, 15*time.Second, "job resumed", func() bool { return !groupStopped(pid) && read() > held+3 })
	testwait.For(t, 10*time.Second, "alpha awake", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })

	// A database without the setting: using the device no longer matters.
	loadDB(t, cl, "mtype desk = {mem=64}\nmachine alpha = desk\n")
	time.Sleep(3 * server.LeaseRenewInterval) // past a renewal or two
	use()
	testwait.Holds(t, 2*time.Second, "the machine awake after the database dropped sleep_on_input", func() bool {
		return !groupStopped(pid) && machineOf(t, cl, "alpha").State != client.MachineAsleep
	})
	if _, err := cl.Kill(ctx(t), job.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

// TestOwnerQueuePolicy: the machine's database declaration sleeps on
// input and vacates after 10 minutes; queue KEEP vacates after 1 s but
// keeps its jobs suspended, queue NOW says suspend=no. When the owner
// comes back, NOW's job is killed at once ("owner returned"), and both
// KEEP's job and the default queue's stay stopped and running well past
// KEEP's vacate_after; when the machine wakes, both continue.
func TestOwnerQueuePolicy(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dev, use := ownerDevice(t)
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{InputGlobs: []string{dev}, Interval: 50 * time.Millisecond}
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
	loadDB(t, cl, "machine alpha = {nprocs=4, sleep_on_input=3s, vacate_after=10m}\n"+
		"add_q KEEP = {vacate_after=1s, keep_suspended=yes}\nadd_q NOW = {suspend=no}\n")

	pids := map[string]int{}
	names := map[string]string{}
	for _, q := range []string{"KEEP", "NOW", ""} {
		job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("while true; do sleep 0.05; done", q)})
		if err != nil {
			t.Fatalf("submit to %q: %v", q, err)
		}
		names[q] = job.Name
		pids[q] = runningPID(t, cl, job.Name)
	}
	// The jobs started after the load, so the machine's settings are in
	// force once a renewal has come back; use the device until it sleeps.
	testwait.For(t, 15*time.Second, "KEEP's job stopped", func() bool {
		use()
		return groupStopped(pids["KEEP"])
	})
	asleep := time.Now()
	testwait.For(t, 10*time.Second, "NOW's job killed", func() bool {
		use()
		j, err := cl.Job(ctx(t), names["NOW"])
		return err == nil && j.Instances[0].State == client.InstanceKilled
	})
	if j, _ := cl.Job(ctx(t), names["NOW"]); j.Instances[0].Reason != stub.ReasonOwnerReturned {
		t.Errorf("NOW's job reason %q, want %q", j.Instances[0].Reason, stub.ReasonOwnerReturned)
	}
	t.Logf("suspend=no job killed %v after the machine fell asleep", time.Since(asleep))
	// Well past KEEP's vacate_after, the owner still at the keyboard.
	testwait.For(t, 10*time.Second, "past KEEP's vacate_after", func() bool {
		use()
		return time.Since(asleep) > 2500*time.Millisecond
	})
	for _, q := range []string{"KEEP", ""} {
		if !groupStopped(pids[q]) {
			t.Errorf("queue %q job state %q past KEEP's vacate_after, want stopped", q, procStateOf(pids[q]))
		}
		if j, err := cl.Job(ctx(t), names[q]); err != nil || j.Instances[0].State != client.InstanceRunning {
			t.Errorf("queue %q job %+v (%v), want running", q, j.Instances, err)
		}
	}
	// The owner leaves: both continue.
	for _, q := range []string{"KEEP", ""} {
		testwait.For(t, 15*time.Second, "queue "+q+" job continues", func() bool { return !groupStopped(pids[q]) })
		if _, err := cl.Kill(ctx(t), names[q], client.KillRequest{}); err != nil {
			t.Fatalf("kill: %v", err)
		}
	}
}

// TestOwnerSettingsFromInitFile: sleep_on_input in a stub's init file
// turns the policy on with no flag: using the device stops the job, and
// the machine wakes when it rests; then a database declaring the machine
// with sleep_on_input=0 wins over the init file (flags < init file <
// database): using the device no longer matters.
func TestOwnerSettingsFromInitFile(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dev, use := ownerDevice(t)
	c.AddStubConfig("alpha", "sleep_on_input=2s\n", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{InputGlobs: []string{dev}, Interval: 50 * time.Millisecond}
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
	job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("while true; do sleep 0.05; done", "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	pid := runningPID(t, cl, job.Name)
	use()
	testwait.For(t, 10*time.Second, "job stopped by the init file's sleep_on_input", func() bool { return groupStopped(pid) })
	testwait.For(t, 15*time.Second, "job resumed", func() bool { return !groupStopped(pid) })

	// A declared machine's settings win over the init file's for what
	// they name: sleep_on_input=0 turns the detector off.
	loadDB(t, cl, "machine alpha = {sleep_on_input=0}\n")
	time.Sleep(3 * server.LeaseRenewInterval)
	use()
	testwait.Holds(t, 2*time.Second, "the job running (the database's sleep_on_input=0 wins over the init file's)", func() bool {
		return !groupStopped(pid)
	})
	if _, err := cl.Kill(ctx(t), job.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

// TestOwnerWindowFromDatabase: an mtype's available window that excludes
// the present puts a machine of that mtype, whose stub has no window of
// its own, to sleep ("outside window") with its next renewal; a database
// without it wakes the machine.
func TestOwnerWindowFromDatabase(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{Interval: 50 * time.Millisecond}
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
	from := time.Now().Add(2 * time.Hour)
	window := from.Format("15:04") + "-" + from.Add(time.Hour).Format("15:04")
	loadDB(t, cl, "mtype desk = {available={\""+window+"\"}}\nmachine alpha = desk\n")
	testwait.For(t, 10*time.Second, "alpha asleep outside its window "+window, func() bool {
		m := machineOf(t, cl, "alpha")
		return m.State == client.MachineAsleep && m.Asleep == "outside window"
	})
	loadDB(t, cl, "mtype desk = {mem=64}\nmachine alpha = desk\n")
	testwait.For(t, 10*time.Second, "alpha awake", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
}
