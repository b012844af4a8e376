package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sampleJobs has one job per interesting shape, out of id order.
func sampleJobs() []client.Job {
	return []client.Job{
		{
			ID: 7, Name: "test1", Owner: "tclark", State: client.JobRunning, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "test1", Min: 4, Args: []string{"4"}, Binaries: map[string]string{
				"sparc": "/usr/u/fred/sparc/test", "mips": "/usr/u/fred/mips/test",
			}},
			Instances: []client.Instance{
				{Index: 1, Attempt: 1, State: client.InstanceRunning, Machine: "viola", Binary: "/usr/u/fred/mips/test", PID: 4243,
					StartedAt: t0.Add(time.Second)},
				{Index: 0, Attempt: 1, State: client.InstanceRunning, Machine: "flute", Binary: "/usr/u/fred/sparc/test", PID: 4242,
					StartedAt: t0.Add(20 * time.Minute)},
				{Index: 2, Attempt: 1, State: client.InstanceQueued},
				{Index: 3, Attempt: 1, State: client.InstanceQueued},
			},
		},
		{
			ID: 3, Name: "mixed", Owner: "alice", State: client.JobFailed, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "mixed", Min: 7, Binaries: map[string]string{client.AnyKey: "/bin/sh"}},
			Instances: []client.Instance{
				{Index: 0, Attempt: 1, State: client.InstanceExited, Machine: "stub1", Binary: "/bin/sh", PID: 100,
					StartedAt: t0.Add(2 * time.Second), EndedAt: t0.Add(95 * time.Second)},
				{Index: 1, Attempt: 1, State: client.InstanceFailed, Machine: "stub2", Binary: "/bin/sh", PID: 101, ExitCode: 3},
				{Index: 2, Attempt: 1, State: client.InstanceFailed, Machine: "stub1", Binary: "/bin/sh", Error: "exec: fork/exec /bin/sh: permission denied"},
				{Index: 3, Attempt: 1, State: client.InstanceSignaled, Machine: "stub2", Binary: "/bin/sh", PID: 103, Signal: "KILL", ExitCode: -1},
				{Index: 4, Attempt: 2, State: client.InstanceKilled, Machine: "stub1", Binary: "/bin/sh", PID: 104, Signal: "TERM", KillRequested: true},
				{Index: 5, Attempt: 1, State: client.InstanceLost, Machine: "stub3", Binary: "/bin/sh", PID: 105},
				{Index: 6, Attempt: 1, State: client.InstancePlaced, Machine: "stub2", Binary: "/bin/sh"},
			},
		},
		{
			ID: 15, Name: "limits", Owner: "carol", State: client.JobRunning, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "limits", Min: 4, Queue: "NEW_Q", Binaries: map[string]string{client.AnyKey: "/bin/hog"}},
			Instances: []client.Instance{
				{Index: 0, Attempt: 1, State: client.InstanceSuspended, Machine: "stub1", Binary: "/bin/hog", PID: 300, Queue: "NEW_Q"},
				{Index: 1, Attempt: 1, State: client.InstanceKilled, Machine: "stub2", Binary: "/bin/hog", PID: 301, Signal: "TERM",
					Reason: "run limit of 200m exceeded", Queue: "NEW_Q"},
				{Index: 2, Attempt: 1, State: client.InstanceKilled, Machine: "stub1", Binary: "/bin/hog", PID: 302, Signal: "KILL",
					Reason: "memory limit of 20 MB exceeded", Queue: "NEW_Q"},
				{Index: 3, Attempt: 2, State: client.InstanceSignaled, Machine: "stub2", Binary: "/bin/hog", PID: 303, Signal: "KILL",
					Reason: "killed by netkill"},
			},
		},
		{
			ID: 9, Name: "job9", Owner: "bob", State: client.JobKilled, SubmittedAt: t0,
			Spec: client.JobSpec{Min: 3, Binaries: map[string]string{client.AnyKey: "/bin/sleep"}},
			Instances: []client.Instance{
				{Index: 0, Attempt: 1, State: client.InstanceKilled, Machine: "stub1", Binary: "/bin/sleep", PID: 200, Signal: "TERM", KillRequested: true},
				{Index: 1, Attempt: 1, State: client.InstanceKilled},
				{Index: 2, Attempt: 1, State: client.InstanceKilled},
			},
		},
		{
			ID: 12, Name: "waiting", Owner: "bob", State: client.JobQueued, SubmittedAt: t0,
			Spec:      client.JobSpec{Binaries: map[string]string{"x86_64": "/opt/a", "arm64": "/opt/b", "riscv": "/opt/a"}},
			Instances: []client.Instance{{Index: 0, Attempt: 1, State: client.InstanceQueued}},
		},
	}
}

func sampleMachines() []client.Machine {
	return []client.Machine{
		{
			Name: "viola", Arch: "mips", MType: "mips", CPUs: 1, Slots: 1, MemoryMB: 512, Rating: 16, Load: 0.5, Running: 1,
			State: client.MachineUp, Addr: "10.0.0.2:4656", Declared: true,
			Keys: []string{"mips", "fpu", "xfpu", "mathlab"}, Attrs: map[string]float64{"mem": 16, "rating": 16},
			Mounts:     []string{"/usr/fsys/fs1", "/usr/fsys/fs2"},
			ReservedBy: "tclark", ReservedUntil: t0.Add(2 * time.Hour),
		},
		{
			Name: "flute", Arch: "x86_64", MType: "sparc1+", CPUs: 16, Slots: 16, MemoryMB: 15974, Rating: 8, Load: 3.25, Running: 4,
			ExecUsedBytes: 3 << 30 / 2, State: client.MachineUp, Addr: "10.0.0.1:4656", Declared: true,
			Keys: []string{"sparc"}, Attrs: map[string]float64{"mem": 16, "rating": 8},
		},
		{Name: "oboe", Arch: "", CPUs: 0, MemoryMB: 0, State: client.MachineDown},
		{Name: "tuba", Arch: "arm64", CPUs: 4, Slots: 4, MemoryMB: 1024, Rating: 1.5, Load: 0, State: client.MachineUp, ReservedBy: "root"},
		{Name: "harp", Arch: "x86_64", CPUs: 8, Slots: 8, MemoryMB: 8192, State: client.MachineUp,
			ReservedBy: "alice", ReservedUntil: t0.Add(36 * time.Hour)},
		{
			Name: "bongo", Arch: "sparc", MType: "sparc1+", CPUs: 2, Slots: 2, MemoryMB: 32768, Rating: 8, Load: 1, Running: 1,
			State: client.MachineDraining, Keys: []string{"sparc"}, Attrs: map[string]float64{"mem": 32, "rating": 8},
			Mounts: []string{"/usr/fsys/fs1"},
		},
		{Name: "cello", Arch: "x86_64", CPUs: 4, Slots: 4, MemoryMB: 4096, State: client.MachineDraining, Problem: "exec dir full: 0 B free"},
		{Name: "piano", Arch: "x86_64", CPUs: 8, Slots: 8, MemoryMB: 16384, Load: 0.5, Running: 1, ExecUsedBytes: 40960, State: client.MachineAsleep, Asleep: "console login"},
	}
}

// sampleWhy explains two queued instances of a job, out of order; the
// second came without a one-line reason, as an older server might send.
func sampleWhy() []client.WhyInstance {
	return []client.WhyInstance{
		{
			Instance: 3, Attempt: 2,
			Rejections: []client.Rejection{
				{Filter: "binary", Count: 1, Reason: "lacks binary key sparc|mips"},
				{Filter: "mounts", Count: 2, Reason: "lack mount /usr/u/fred/data"},
			},
		},
		{
			Instance: 2, Attempt: 1,
			Reason: "8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot",
			Rejections: []client.Rejection{
				{Filter: "keys", Count: 8, Reason: "lack key mathlab"},
				{Filter: "compare", Count: 3, Reason: "have mem<=10"},
				{Filter: "slot", Count: 1, Reason: "has no free slot"},
			},
		},
		{Instance: 4, Attempt: 1},
	}
}

// sampleDependentJobs are a job held for job 12 and one cancelled
// because job 12 failed.
func sampleDependentJobs() []client.Job {
	bins := map[string]string{client.AnyKey: "/bin/run"}
	reason := "dependency: afterok job 12 (build) failed"
	return []client.Job{
		{
			ID: 13, Name: "test", Owner: "fred", State: client.JobHeld, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "test", Min: 2, Binaries: bins, AfterOK: []string{"12"}},
			Instances: []client.Instance{
				{Index: 0, Attempt: 1, State: client.InstanceHeld},
				{Index: 1, Attempt: 1, State: client.InstanceHeld},
			},
			Dependencies: []client.Dependency{{Kind: "afterok", JobID: 12, Name: "build", State: client.JobRunning, Verdict: client.DepWaiting}},
		},
		{
			ID: 14, Name: "deploy", Owner: "fred", State: client.JobCancelled, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "deploy", Binaries: bins, AfterOK: []string{"12"}},
			Instances: []client.Instance{
				{Index: 0, Attempt: 1, State: client.InstanceCancelled, Reason: reason, EndedAt: t0},
			},
			Dependencies: []client.Dependency{{Kind: "afterok", JobID: 12, Name: "build", State: client.JobFailed, Verdict: client.DepNever}},
		},
	}
}

// sampleCronJobs is a cron job with two runs, one running, one skipped
// firing, and an ended one.
func sampleCronJobs() []client.Job {
	bins := map[string]string{client.AnyKey: "/usr/local/bin/backup"}
	next := t0.Add(2 * time.Hour)
	return []client.Job{
		{
			ID: 20, Name: "backup", Owner: "fred", State: client.JobScheduled, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "backup", Binaries: bins, Cron: "0 */2 * * *"},
			Cron: &client.CronStatus{Schedule: "0 */2 * * *", Catchup: client.CatchupLast, Overlap: client.OverlapSkip, Next: next, Through: t0,
				Runs: []uint64{21, 22}, Skipped: 1, Skips: []client.CronSkip{{Scheduled: t0.Add(-2 * time.Hour), Reason: "overlap: run job 21 (backup.fred#1) has not ended (overlap=skip)"}}},
		},
		{
			ID: 21, Name: "backup.fred#1", Owner: "fred", State: client.JobRunning, SubmittedAt: t0, CronJob: 20, Scheduled: t0.Add(-4 * time.Hour),
			Spec:      client.JobSpec{Name: "backup.fred#1", Binaries: bins},
			Instances: []client.Instance{{Index: 0, Attempt: 1, State: client.InstanceRunning, Machine: "flute", Binary: "/usr/local/bin/backup", PID: 4242}},
		},
		{
			ID: 22, Name: "backup.fred#2", Owner: "fred", State: client.JobQueued, SubmittedAt: t0, CronJob: 20, Scheduled: t0,
			Spec:      client.JobSpec{Name: "backup.fred#2", Binaries: bins},
			Instances: []client.Instance{{Index: 0, Attempt: 1, State: client.InstanceQueued}},
		},
		{
			ID: 23, Name: "tick", Owner: "gina", State: client.JobKilled, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "tick", Binaries: bins, Cron: "@every 2s"},
			Cron: &client.CronStatus{Schedule: "@every 2s", Catchup: client.CatchupNone, Overlap: client.OverlapAllow, Through: t0, Ended: true, EndedBy: "gina", EndedAt: t0},
		},
	}
}

func sampleServers() []client.Server {
	return []client.Server{
		{Name: "s2", Address: "10.0.0.2:4647", HTTP: "10.0.0.2:4646", Role: "follower", Term: 5, LastIndex: 1041, Leader: "s1", LastContact: "12ms", Healthy: true,
			Version: "v1.3.0", CommandLevel: 25, FilesBytes: 42 << 20, Files: 3},
		{Name: "s1", Address: "10.0.0.1:4647", HTTP: "10.0.0.1:4646", Role: "leader", Term: 5, LastIndex: 1042, Leader: "s1", LastContact: "leader", Healthy: true,
			Version: "v1.4.0-2-g1a2b3c4", CommandLevel: 26, FilesBytes: 42 << 20, Files: 3},
		{Name: "s4", Address: "10.0.0.4:4647", HTTP: "10.0.0.4:4646", Role: "follower", Term: 4, LastIndex: 990, Leader: "", LastContact: "3.5s"},
		{Name: "s3", Address: "10.0.0.3:4647", Error: "connection refused"},
		{Name: "s5", Address: "10.0.0.5:4647", HTTP: "10.0.0.5:4646", Role: "follower", Term: 5, LastIndex: 873, Leader: "s1", LastContact: "8ms",
			Problem: "log writes failing for 12s: write /var/lib/netmgr/s5/raft.db: no space left on device"},
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"jobs.golden", func(b *bytes.Buffer) error { return renderJobs(b, sampleJobs(), t0.Add(time.Hour)) }},
		{"jobs.json.golden", func(b *bytes.Buffer) error { return renderJobsJSON(b, sampleJobs()) }},
		{"jobs_empty.golden", func(b *bytes.Buffer) error { return renderJobs(b, nil, t0) }},
		{"job_detail.golden", func(b *bytes.Buffer) error { return renderJobDetail(b, sampleDetailJob(), t0.Add(90*time.Second)) }},
		{"job_detail_mixed.golden", func(b *bytes.Buffer) error { return renderJobDetail(b, sampleJobs()[1], t0) }},
		{"jobs_empty.json.golden", func(b *bytes.Buffer) error { return renderJobsJSON(b, nil) }},
		{"machines.golden", func(b *bytes.Buffer) error { return renderMachines(b, sampleMachines(), t0) }},
		{"machines.json.golden", func(b *bytes.Buffer) error { return renderMachinesJSON(b, sampleMachines()) }},
		{"why.golden", func(b *bytes.Buffer) error {
			return renderWhy(b, client.Job{Name: "test1", Owner: "tclark"}, sampleWhy())
		}},
		{"why.json.golden", func(b *bytes.Buffer) error { return renderWhyJSON(b, sampleWhy()) }},
		{"why_none.golden", func(b *bytes.Buffer) error { return renderWhy(b, client.Job{Name: "test1", Owner: "tclark"}, nil) }},
		{"why_none.json.golden", func(b *bytes.Buffer) error { return renderWhyJSON(b, nil) }},
		{"jobs_deps.golden", func(b *bytes.Buffer) error { return renderJobs(b, sampleDependentJobs(), t0) }},
		{"jobs_cron.golden", func(b *bytes.Buffer) error { return renderJobs(b, sampleCronJobs(), t0) }},
		{"jobs_cron.json.golden", func(b *bytes.Buffer) error { return renderJobsJSON(b, sampleCronJobs()) }},
		{"why_cron.golden", func(b *bytes.Buffer) error { return renderWhy(b, sampleCronJobs()[0], nil) }},
		{"why_held.golden", func(b *bytes.Buffer) error {
			return renderWhy(b, sampleDependentJobs()[0], []client.WhyInstance{
				{Instance: 0, Attempt: 1, Reason: "held(dependency): waits for job 12 (running) to succeed"},
				{Instance: 1, Attempt: 1, Reason: "held(dependency): waits for job 12 (running) to succeed"},
			})
		}},
		{"why_cancelled.golden", func(b *bytes.Buffer) error { return renderWhy(b, sampleDependentJobs()[1], nil) }},
		{"servers.golden", func(b *bytes.Buffer) error { return renderServers(b, sampleServers()) }},
		{"servers.json.golden", func(b *bytes.Buffer) error { return renderServersJSON(b, sampleServers()) }},
		{"queues.golden", func(b *bytes.Buffer) error { return renderQueues(b, sampleQueues(), time.Time{}) }},
		{"queues.json.golden", func(b *bytes.Buffer) error { return renderQueuesJSON(b, sampleQueues()) }},
		{"queues_empty.golden", func(b *bytes.Buffer) error { return renderQueues(b, nil, time.Time{}) }},
		{"queues_empty.json.golden", func(b *bytes.Buffer) error { return renderQueuesJSON(b, nil) }},
		{"reservations.golden", func(b *bytes.Buffer) error { return renderReservations(b, sampleReservations(), t0) }},
		{"reservations.json.golden", func(b *bytes.Buffer) error { return renderReservationsJSON(b, sampleReservations()) }},
		{"reservations_empty.golden", func(b *bytes.Buffer) error { return renderReservations(b, nil, t0) }},
		{"reservations_empty.json.golden", func(b *bytes.Buffer) error { return renderReservationsJSON(b, nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.render(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestRenderDoesNotReorderInput(t *testing.T) {
	jobs := sampleJobs()
	if err := renderJobs(&bytes.Buffer{}, jobs, t0); err != nil {
		t.Fatal(err)
	}
	if got, want := jobs[0].ID, uint64(7); got != want {
		t.Errorf("renderJobs sorted its input: jobs[0].ID = %d, want %d", got, want)
	}
	if got, want := jobs[0].Instances[0].Index, 1; got != want {
		t.Errorf("renderJobs sorted its input: instance[0].Index = %d, want %d", got, want)
	}
}

func TestFormatRating(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "-"},
		{1, "1"},
		{16, "16"},
		{1.5, "1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := formatRating(tt.in); got != tt.want {
				t.Errorf("formatRating(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatMemory(t *testing.T) {
	tests := []struct {
		mb   int64
		want string
	}{
		{0, "0M"},
		{512, "512M"},
		{1023, "1023M"},
		{1024, "1.0G"},
		{15974, "15.6G"},
		{1 << 20, "1024.0G"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := formatMemory(tt.mb); got != tt.want {
				t.Errorf("formatMemory(%d) = %q, want %q", tt.mb, got, tt.want)
			}
		})
	}
}

func TestInstanceState(t *testing.T) {
	tests := []struct {
		name string
		in   client.Instance
		want string
	}{
		{"running", client.Instance{State: client.InstanceRunning}, "running"},
		{"exited", client.Instance{State: client.InstanceExited}, "exited(0)"},
		{"failed with code", client.Instance{State: client.InstanceFailed, ExitCode: 3}, "failed(3)"},
		{"failed to exec", client.Instance{State: client.InstanceFailed, Error: "exec: no such file"}, "failed(exec: no such file)"},
		{"failed to exec, os error", client.Instance{State: client.InstanceFailed, Error: "exec: fork/exec /bin/x: no such file or directory"}, "failed(exec: no such file)"},
		{"exited after retries", client.Instance{State: client.InstanceExited, Attempt: 3}, "exited(0) after 3 attempts"},
		{"failed after retries", client.Instance{State: client.InstanceFailed, ExitCode: 2, Attempt: 2}, "failed(2) after 2 attempts"},
		{"running, second attempt", client.Instance{State: client.InstanceRunning, Attempt: 2}, "running"},
		{"signaled", client.Instance{State: client.InstanceSignaled, Signal: "KILL"}, "signaled(KILL)"},
		{"signaled without name", client.Instance{State: client.InstanceSignaled}, "signaled(-)"},
		{"killed", client.Instance{State: client.InstanceKilled, Signal: "TERM"}, "killed"},
		{"lost", client.Instance{State: client.InstanceLost}, "lost"},
		{"suspended", client.Instance{State: client.InstanceSuspended}, "suspended"},
		{"run limit", client.Instance{State: client.InstanceKilled, Signal: "TERM", Reason: "timeout: run limit of 200m exceeded"}, "killed(timeout)"},
		{"memory limit", client.Instance{State: client.InstanceKilled, Reason: "memory: memory limit of 20 MB exceeded"}, "killed(memory)"},
		{"run limit, trapped and failed", client.Instance{State: client.InstanceFailed, ExitCode: 3, Reason: "timeout: run limit of 90s exceeded"}, "failed(timeout)"},
		{"run limit from an older stub", client.Instance{State: client.InstanceKilled, Signal: "TERM", Reason: "run limit of 200m exceeded"}, "killed(timeout)"},
		{"memory limit from an older stub", client.Instance{State: client.InstanceKilled, Reason: "memory limit of 20 MB exceeded"}, "killed(memory)"},
		{"netkill reason", client.Instance{State: client.InstanceKilled, Reason: "killed by netkill"}, "killed"},
		{"limit reason while running", client.Instance{State: client.InstanceRunning, Reason: "run limit of 200m exceeded"}, "running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := instanceState(tt.in); got != tt.want {
				t.Errorf("instanceState() = %q, want %q", got, tt.want)
			}
		})
	}
}

// sampleQueues has the default queue, the paper's NEW_Q and limits that
// print in each unit, out of order.
func sampleQueues() []client.Queue {
	return []client.Queue{
		{Name: "NEW_Q", Priority: 0, MaxSize: 120, MaxActive: 100, MaxRunSeconds: 200 * 60, MaxMemMB: 20, Jobs: 3, Waiting: 5, Running: 100},
		{Name: client.DefaultQueue, Jobs: 2, Waiting: 1, Running: 7},
		{Name: "short", Priority: 10, MaxActive: 4, MaxRunSeconds: 90, MaxMemMB: 2048},
		{Name: "big", Priority: -1, MaxSize: 5, MaxRunSeconds: 2 * 3600, MaxMemMB: 1536, Jobs: 1, Waiting: 64},
	}
}

// sampleReservations has one reservation per shape of window, out of id
// order.
func sampleReservations() []client.Reservation {
	return []client.Reservation{
		{ID: 5, Owner: "alice", Machines: []string{"harp"}, From: t0.Add(time.Hour), Until: t0.Add(36 * time.Hour)},
		{ID: 3, Owner: "root", Machines: []string{"flute", "viola"}, From: t0.Add(-time.Hour), Until: t0.Add(time.Hour)},
		{ID: 4, Owner: "tclark", Machines: []string{"tuba"}, From: t0.Add(-400 * 24 * time.Hour)},
	}
}

func TestFormatWhen(t *testing.T) {
	now := time.Date(2026, 3, 4, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		t    time.Time
		want string
	}{
		{"today", now.Add(time.Hour), "14:00"},
		{"today from UTC", time.Date(2026, 3, 4, 15, 30, 0, 0, time.UTC), "16:30"},
		{"tomorrow", now.Add(24 * time.Hour), "Mar 5 13:00"},
		{"next day once local", time.Date(2026, 3, 4, 23, 30, 0, 0, time.UTC), "Mar 5 00:30"},
		{"next year", now.AddDate(1, 0, 0), "2027-03-04 13:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatWhen(tt.t, now); got != tt.want {
				t.Errorf("formatWhen(%v) = %q, want %q", tt.t, got, tt.want)
			}
		})
	}
}

func TestFormatLimits(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"run none", formatRunLimit(0), "-"},
		{"run minutes", formatRunLimit(200 * 60), "200m"},
		{"run hours as minutes", formatRunLimit(2 * 3600), "120m"},
		{"run seconds", formatRunLimit(90), "90s"},
		{"mem none", formatMemLimit(0), "-"},
		{"mem MB", formatMemLimit(20), "20M"},
		{"mem GB", formatMemLimit(2048), "2G"},
		{"mem not whole GB", formatMemLimit(1536), "1536M"},
		{"count none", formatLimit(0), "-"},
		{"count", formatLimit(120), "120"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestDescribeReservation(t *testing.T) {
	tests := []struct {
		name string
		r    client.Reservation
		want string
	}{
		{"window", client.Reservation{ID: 3, Owner: "root", Machines: []string{"flute", "viola"}, From: t0, Until: t0.Add(2 * time.Hour)},
			"reservation 3: flute, viola for root from 03:04 until 05:04"},
		{"open ended", client.Reservation{ID: 4, Owner: "tclark", Machines: []string{"tuba"}, From: t0.Add(24 * time.Hour)},
			"reservation 4: tuba for tclark from Jan 3 03:04 until unreserved"},
		{"no start from the server", client.Reservation{ID: 5, Owner: "bob", Machines: []string{"harp"}},
			"reservation 5: harp for bob from now until unreserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeReservation(tt.r, t0); got != tt.want {
				t.Errorf("describeReservation() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDescribeQueue(t *testing.T) {
	tests := []struct {
		name string
		q    client.Queue
		want string
	}{
		{"no limits", client.Queue{Name: "q"}, "priority 0, no limits"},
		{"all limits", client.Queue{Name: "NEW_Q", Priority: 5, MaxSize: 120, MaxActive: 100, MaxRunSeconds: 12000, MaxMemMB: 20},
			"priority 5, max size 120, max active 100, max run 200m, max mem 20M"},
		{"some limits", client.Queue{Name: "q", Priority: -1, MaxRunSeconds: 90}, "priority -1, max run 90s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeQueue(tt.q); got != tt.want {
				t.Errorf("describeQueue() = %q, want %q", got, tt.want)
			}
		})
	}
}
