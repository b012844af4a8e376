package server_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
	"github.com/netmgr/netmgr/stub/owner"
)

// writeAtomic replaces path with data, so a reader never sees half.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// procStateOf is the state letter of process pid (R, S, T, ...).
func procStateOf(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// groupStopped reports whether process group pgid is stopped: a process
// of it is in state T and none in R or S (a shell waiting in vfork for a
// stopped child is in D).
func groupStopped(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	seen := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			switch procStateOf(pid) {
			case "T":
				seen = true
			case "R", "S":
				return false
			}
		}
	}
	return seen
}

// machineOf returns machine name as the servers list it.
func machineOf(t *testing.T, cl *client.Client, name string) client.Machine {
	t.Helper()
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	for _, m := range ms {
		if m.Name == name {
			return m
		}
	}
	return client.Machine{}
}

// counter reads the number a counting job writes to path.
func counter(path string) func() int {
	return func() int {
		data, _ := os.ReadFile(path)
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
}

// countScript counts in path every 20 ms.
func countScript(path string) string {
	return `i=0; while true; do i=$((i+1)); echo $i > ` + path + `.t; mv ` + path + `.t ` + path + `; sleep 0.02; done`
}

// TestOwnerLoginSleepsSuspendsAndWakes points a stub at a utmp file: a
// login there puts the machine to sleep (netstatus -m, --why, events),
// suspends the job running there (state T, its count stops) and keeps new
// work off; the logout wakes it after --sleep-on-login, the job resumes
// and new work runs.
func TestOwnerLoginSleepsSuspendsAndWakes(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	utmp := filepath.Join(t.TempDir(), "utmp")
	const hold = 500 * time.Millisecond
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{SleepOnLogin: hold, Utmp: utmp, Interval: 50 * time.Millisecond}
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })

	count := filepath.Join(t.TempDir(), "count")
	job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(countScript(count), "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	read := counter(count)
	testwait.For(t, 15*time.Second, "counting", func() bool { return read() > 5 })
	j, err := cl.Job(ctx(t), job.Name)
	if err != nil || j.Instances[0].PID == 0 {
		t.Fatalf("job %+v (%v), want a pid", j, err)
	}
	pid := j.Instances[0].PID

	// The owner logs in on the console.
	login := time.Now()
	writeAtomic(t, utmp, owner.MarshalUtmp(owner.UtmpRecord{Type: owner.UtmpUserProcess, PID: int32(os.Getpid()), Line: "tty1", User: "owner", Time: login}))
	testwait.For(t, 10*time.Second, "job stopped", func() bool { return groupStopped(pid) })
	t.Logf("owner activity to job suspended: %v", time.Since(login))
	testwait.For(t, 10*time.Second, "alpha asleep", func() bool {
		m := machineOf(t, cl, "alpha")
		return m.State == client.MachineAsleep && m.Asleep == "console login"
	})
	stoppedAt := read()
	second, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("exit 0", "")})
	if err != nil {
		t.Fatalf("submit while asleep: %v", err)
	}
	testwait.For(t, 10*time.Second, "why names the sleep", func() bool {
		why, err := cl.Why(ctx(t), second.Name)
		return err == nil && len(why) == 1 && why[0].Reason == "no matching machine is awake: 1 machine is asleep (console login)"
	})
	if got := read(); got != stoppedAt {
		t.Errorf("the suspended job counted on: %d, then %d", stoppedAt, got)
	}
	if j, err := cl.Job(ctx(t), second.Name); err != nil || j.Instances[0].State != client.InstanceQueued {
		t.Errorf("new work while asleep: %+v (%v), want queued", j.Instances, err)
	}

	// The owner logs out: the machine wakes once hold has passed.
	logout := time.Now()
	writeAtomic(t, utmp, owner.MarshalUtmp(owner.UtmpRecord{Type: owner.UtmpDeadProcess, PID: int32(os.Getpid()), Line: "tty1", Time: logout}))
	testwait.For(t, 10*time.Second, "count resumes", func() bool { return read() > stoppedAt+5 })
	if since := time.Since(logout); since < hold {
		t.Errorf("resumed %v after the logout, want no sooner than %v", since, hold)
	}
	if st := procStateOf(pid); st == "T" || st == "" {
		t.Errorf("job's state %q after waking, want it running (S, R or D)", st)
	}
	if _, err := cl.WaitJob(ctx(t), second.Name, client.WaitDone); err != nil {
		t.Errorf("the job submitted while asleep: %v", err)
	}
	testwait.For(t, 10*time.Second, "alpha awake", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })

	evs, err := cl.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var kinds []string
	for _, e := range evs {
		if e.Machine == "alpha" && (e.Kind == "machine-asleep" || e.Kind == "machine-awake") {
			kinds = append(kinds, e.Kind+": "+e.Detail)
		}
	}
	if want := []string{"machine-asleep: asleep (console login)", "machine-awake: awake: takes new work again"}; strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", kinds, want)
	}
}

// ownerLedgerLine is one line a ledger job wrote: its attempt and machine.
type ownerLedgerLine struct{ attempt, machine string }

func readOwnerLedger(t *testing.T, path string) []ownerLedgerLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []ownerLedgerLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if a, m, ok := strings.Cut(sc.Text(), " "); ok {
			out = append(out, ownerLedgerLine{a, m})
		}
	}
	return out
}

// TestOwnerVacates runs a restartable and a plain job on a machine whose
// load monitor then says sleep: both are suspended, and after
// --vacate-after the restartable one starts again elsewhere as attempt 2,
// its ledger showing no overlap, and the other is killed with the reason
// "owner returned".
func TestOwnerVacates(t *testing.T) {
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
	spec := shJob(`while true; do echo "$NETMGR_ATTEMPT $NETMGR_MACHINE" >> `+ledger+`; sleep 0.02; done`, "")
	spec.Restart = client.RestartOnFailure
	restartable, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	plain, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("sleep 600", "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	for _, name := range []string{restartable.Name, plain.Name} {
		testwait.For(t, 15*time.Second, name+" running", func() bool {
			j, err := cl.Job(ctx(t), name)
			return err == nil && j.Instances[0].State == client.InstanceRunning && j.Instances[0].PID != 0
		})
	}
	c.AddStub("beta") // somewhere to go

	writeAtomic(t, said, []byte("sleep owner at the desk\n"))
	testwait.For(t, 10*time.Second, "alpha asleep", func() bool {
		m := machineOf(t, cl, "alpha")
		return m.State == client.MachineAsleep && m.Asleep == "owner at the desk"
	})
	testwait.For(t, 20*time.Second, "plain job killed", func() bool {
		j, err := cl.Job(ctx(t), plain.Name)
		return err == nil && j.Instances[0].State == client.InstanceKilled
	})
	if j, _ := cl.Job(ctx(t), plain.Name); j.Instances[0].Reason != stub.ReasonOwnerReturned {
		t.Errorf("plain job's reason %q, want %q", j.Instances[0].Reason, stub.ReasonOwnerReturned)
	}
	testwait.For(t, 20*time.Second, "restartable job runs again on beta", func() bool {
		j, err := cl.Job(ctx(t), restartable.Name)
		in := j.Instances[0]
		return err == nil && in.State == client.InstanceRunning && in.Attempt == 2 && in.Machine == "beta" && in.Restarts == 0
	})
	testwait.For(t, 10*time.Second, "attempt 2 in the ledger", func() bool {
		lines := readOwnerLedger(t, ledger)
		return len(lines) > 5 && lines[len(lines)-1].attempt == "2"
	})
	// No overlap: once attempt 2 wrote, attempt 1 never did again.
	lines := readOwnerLedger(t, ledger)
	seen2 := false
	for i, l := range lines {
		switch {
		case l.attempt == "2":
			seen2 = true
			if l.machine != "beta" {
				t.Errorf("ledger line %d: attempt 2 on %s, want beta", i, l.machine)
			}
		case seen2:
			t.Fatalf("ledger line %d: attempt %s on %s after attempt 2 began", i, l.attempt, l.machine)
		case l.machine != "alpha":
			t.Errorf("ledger line %d: attempt 1 on %s, want alpha", i, l.machine)
		}
	}
	if _, err := cl.Kill(ctx(t), restartable.Name, client.KillRequest{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

// suspendsAndResumes runs a counting job on c's stub alpha, calls sleep,
// and checks that the machine falls asleep for reason and the job stops
// (state T, its count holds); then, when wake is not nil, calls it and
// checks that the machine wakes and the job counts on.
func suspendsAndResumes(t *testing.T, c *servertest.Cluster, sleep, wake func(), reason string) {
	t.Helper()
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
	count := filepath.Join(t.TempDir(), "count")
	job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob(countScript(count), "")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	read := counter(count)
	testwait.For(t, 15*time.Second, "counting", func() bool { return read() > 5 })
	j, err := cl.Job(ctx(t), job.Name)
	if err != nil || j.Instances[0].PID == 0 {
		t.Fatalf("job %+v (%v), want a pid", j, err)
	}
	pid := j.Instances[0].PID
	sleep()
	testwait.For(t, 10*time.Second, "job stopped", func() bool { return groupStopped(pid) })
	testwait.For(t, 10*time.Second, "alpha asleep ("+reason+")", func() bool {
		m := machineOf(t, cl, "alpha")
		return m.State == client.MachineAsleep && m.Asleep == reason
	})
	stoppedAt := read()
	if wake == nil {
		return
	}
	wake()
	testwait.For(t, 10*time.Second, "count resumes", func() bool { return read() > stoppedAt+5 })
	if st := procStateOf(pid); st == "T" || st == "" {
		t.Errorf("job's state %q after waking, want it running (S, R or D)", st)
	}
	testwait.For(t, 10*time.Second, "alpha awake", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
}

// TestOwnerDetectors puts a machine to sleep with each detector in turn,
// with no real keyboard: a fake input device's access time, a load
// average file above the threshold, a load-monitor script.
func TestOwnerDetectors(t *testing.T) {
	t.Parallel()
	t.Run("input device used", func(t *testing.T) {
		c := servertest.NewCluster(t, 1)
		c.WaitLeader()
		dev := filepath.Join(t.TempDir(), "event0")
		writeAtomic(t, dev, nil)
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(dev, old, old); err != nil {
			t.Fatal(err)
		}
		c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
			cfg.Owner = owner.Config{SleepOnInput: 700 * time.Millisecond, InputGlobs: []string{dev}, Interval: 50 * time.Millisecond}
		})
		// Keys are pressed every 100 ms until wake: the device is read.
		typing, typed := make(chan struct{}), make(chan struct{})
		suspendsAndResumes(t, c,
			func() {
				go func() {
					defer close(typed)
					for {
						if err := os.Chtimes(dev, time.Now(), old); err != nil {
							t.Error(err)
						}
						select {
						case <-typing:
							return
						case <-time.After(100 * time.Millisecond):
						}
					}
				}()
			},
			func() { close(typing); <-typed }, // the machine wakes 700 ms after the last key
			"keyboard or mouse used")
	})
	t.Run("load over the threshold", func(t *testing.T) {
		c := servertest.NewCluster(t, 1)
		c.WaitLeader()
		loadavg := filepath.Join(t.TempDir(), "loadavg")
		writeAtomic(t, loadavg, []byte("0.10 0.10 0.10 1/100 1\n"))
		c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
			cfg.Owner = owner.Config{SleepOnLoad: 2, LoadAvg: loadavg, Interval: 50 * time.Millisecond}
		})
		suspendsAndResumes(t, c,
			func() { writeAtomic(t, loadavg, []byte("3.20 1.00 0.50 4/100 1\n")) },
			func() { writeAtomic(t, loadavg, []byte("1.00 1.00 0.50 1/100 1\n")) },
			"load 3.2 > 2")
	})
	t.Run("load monitor says sleep", func(t *testing.T) {
		c := servertest.NewCluster(t, 1)
		c.WaitLeader()
		dir := t.TempDir()
		said := filepath.Join(dir, "said")
		monitor := filepath.Join(dir, "monitor.sh")
		writeAtomic(t, said, []byte("0.5\n"))
		if err := os.WriteFile(monitor, []byte("#!/bin/sh\ncat "+said+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
			cfg.Owner = owner.Config{LoadMonitor: monitor, MonitorEvery: 100 * time.Millisecond, Interval: 50 * time.Millisecond}
		})
		suspendsAndResumes(t, c,
			func() { writeAtomic(t, said, []byte("sleep owner at the desk\n")) },
			func() { writeAtomic(t, said, []byte("wake\n")) },
			"owner at the desk")
	})
	t.Run("window closes", func(t *testing.T) {
		c := servertest.NewCluster(t, 1)
		c.WaitLeader()
		now := time.Now().UTC()
		closes := now.Add(6 * time.Second)
		window := now.Add(-time.Minute).Format("15:04:05") + "-" + closes.Format("15:04:05")
		c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
			cfg.Owner = owner.Config{Available: []string{window}, Location: time.UTC, Interval: 50 * time.Millisecond}
		})
		suspendsAndResumes(t, c, func() {
			if time.Now().After(closes) {
				t.Skipf("the job started only after the window closed at %s: the machine was too slow for this test", closes.Format("15:04:05"))
			}
		}, nil, "outside window")
	})
}

// TestOwnerKeepsSuspendedAndLeavesTheUsers runs two plain jobs, one of
// them suspended by its user (netkill --suspend), on a machine with
// --keep-suspended: asleep past --vacate-after, the other stays stopped
// rather than killed, and waking continues it but not the user's.
func TestOwnerKeepsSuspendedAndLeavesTheUsers(t *testing.T) {
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
	const vacateAfter = 500 * time.Millisecond
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{LoadMonitor: monitor, MonitorEvery: 100 * time.Millisecond, Interval: 50 * time.Millisecond}
		cfg.VacateAfter, cfg.KeepSuspended = vacateAfter, true
	})
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha up", func() bool { return machineOf(t, cl, "alpha").State == client.MachineUp })
	pids := map[string]int{}
	var names []string
	for range 2 {
		job, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shJob("while true; do sleep 0.05; done", "")})
		if err != nil {
			t.Fatalf("submit: %v", err)
		}
		names = append(names, job.Name)
		testwait.For(t, 15*time.Second, job.Name+" running", func() bool {
			j, err := cl.Job(ctx(t), job.Name)
			pids[job.Name] = j.Instances[0].PID
			return err == nil && j.Instances[0].State == client.InstanceRunning && j.Instances[0].PID != 0
		})
	}
	users, plain := names[0], names[1]
	if _, err := cl.Suspend(ctx(t), users); err != nil {
		t.Fatalf("suspend: %v", err)
	}
	testwait.For(t, 10*time.Second, "the user's job stopped", func() bool { return groupStopped(pids[users]) })

	asleep := time.Now()
	writeAtomic(t, said, []byte("sleep\n"))
	testwait.For(t, 10*time.Second, "the other job stopped", func() bool { return groupStopped(pids[plain]) })
	// Past --vacate-after (and a sweep), it is still there and stopped.
	testwait.For(t, 10*time.Second, "vacate time passed", func() bool { return time.Since(asleep) > 3*vacateAfter })
	if !groupStopped(pids[plain]) {
		t.Fatalf("kept job's state %q past --vacate-after, want it stopped", procStateOf(pids[plain]))
	}
	if j, err := cl.Job(ctx(t), plain); err != nil || j.Instances[0].State != client.InstanceRunning {
		t.Fatalf("kept job %+v (%v), want running", j.Instances, err)
	}

	writeAtomic(t, said, []byte("wake\n"))
	testwait.For(t, 10*time.Second, "the other job continues", func() bool { return !groupStopped(pids[plain]) })
	if !groupStopped(pids[users]) {
		t.Errorf("the user's job state %q after waking, want it stopped: only its user resumes it", procStateOf(pids[users]))
	}
}

// TestOwnerIdleRequirement: a job asking idle>=MINUTES runs only where
// the owner has been away that long; a machine whose stub does not watch
// its owner lacks the attribute.
func TestOwnerIdleRequirement(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	dev := filepath.Join(t.TempDir(), "event0")
	writeAtomic(t, dev, nil)
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(dev, old, old); err != nil {
		t.Fatal(err)
	}
	c.AddStubConfig("alpha", "", func(cfg *stub.Config) {
		cfg.Owner = owner.Config{SleepOnInput: time.Minute, InputGlobs: []string{dev}, Interval: 50 * time.Millisecond}
	})
	c.AddStub("beta")
	cl := c.Client()
	testwait.For(t, 15*time.Second, "alpha and beta up", func() bool {
		return machineOf(t, cl, "alpha").State == client.MachineUp && machineOf(t, cl, "beta").State == client.MachineUp
	})
	idle := func(minutes float64, script string) client.JobSpec {
		s := shJob(script, "")
		s.Requirements = []client.Requirement{{Attr: "idle", Op: ">=", Value: minutes}}
		return s
	}
	away, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: idle(60, `echo "$NETMGR_MACHINE"`)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	j, err := cl.WaitJob(ctx(t), away.Name, client.WaitDone)
	if err != nil || j.Instances[0].Machine != "alpha" || j.Instances[0].State != client.InstanceExited {
		t.Fatalf("idle>=60: %+v (%v), want exited on alpha (idle two hours)", j.Instances, err)
	}
	long, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: idle(600, "exit 0")})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	testwait.For(t, 10*time.Second, "why: not idle long enough", func() bool {
		why, err := cl.Why(ctx(t), long.Name)
		return err == nil && len(why) == 1 && len(why[0].Rejections) == 2
	})
	why, _ := cl.Why(ctx(t), long.Name)
	t.Logf("idle>=600 waits: %s", why[0].Reason)
	if j, err := cl.Job(ctx(t), long.Name); err != nil || j.Instances[0].State != client.InstanceQueued {
		t.Errorf("idle>=600: %+v (%v), want queued", j.Instances, err)
	}
}
