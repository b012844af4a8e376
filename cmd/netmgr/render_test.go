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
				{Index: 1, Attempt: 1, State: client.InstanceRunning, Machine: "viola", Binary: "/usr/u/fred/mips/test", PID: 4243},
				{Index: 0, Attempt: 1, State: client.InstanceRunning, Machine: "flute", Binary: "/usr/u/fred/sparc/test", PID: 4242},
				{Index: 2, Attempt: 1, State: client.InstanceQueued},
				{Index: 3, Attempt: 1, State: client.InstanceQueued},
			},
		},
		{
			ID: 3, Name: "mixed", Owner: "alice", State: client.JobFailed, SubmittedAt: t0,
			Spec: client.JobSpec{Name: "mixed", Min: 7, Binaries: map[string]string{client.AnyKey: "/bin/sh"}},
			Instances: []client.Instance{
				{Index: 0, Attempt: 1, State: client.InstanceExited, Machine: "stub1", Binary: "/bin/sh", PID: 100},
				{Index: 1, Attempt: 1, State: client.InstanceFailed, Machine: "stub2", Binary: "/bin/sh", PID: 101, ExitCode: 3},
				{Index: 2, Attempt: 1, State: client.InstanceFailed, Machine: "stub1", Binary: "/bin/sh", Error: "exec: fork/exec /bin/sh: permission denied"},
				{Index: 3, Attempt: 1, State: client.InstanceSignaled, Machine: "stub2", Binary: "/bin/sh", PID: 103, Signal: "KILL", ExitCode: -1},
				{Index: 4, Attempt: 2, State: client.InstanceKilled, Machine: "stub1", Binary: "/bin/sh", PID: 104, Signal: "TERM", KillRequested: true},
				{Index: 5, Attempt: 1, State: client.InstanceLost, Machine: "stub3", Binary: "/bin/sh", PID: 105},
				{Index: 6, Attempt: 1, State: client.InstancePlaced, Machine: "stub2", Binary: "/bin/sh"},
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
			Mounts: []string{"/usr/fsys/fs1", "/usr/fsys/fs2"},
		},
		{
			Name: "flute", Arch: "x86_64", MType: "sparc1+", CPUs: 16, Slots: 16, MemoryMB: 15974, Rating: 8, Load: 3.25, Running: 4,
			State: client.MachineUp, Addr: "10.0.0.1:4656", Declared: true,
			Keys: []string{"sparc"}, Attrs: map[string]float64{"mem": 16, "rating": 8},
		},
		{Name: "oboe", Arch: "", CPUs: 0, MemoryMB: 0, State: client.MachineDown},
		{Name: "tuba", Arch: "arm64", CPUs: 4, Slots: 4, MemoryMB: 1024, Rating: 1.5, Load: 0, State: client.MachineUp},
		{
			Name: "bongo", Arch: "sparc", MType: "sparc1+", CPUs: 2, Slots: 2, MemoryMB: 32768, Rating: 8, Load: 1, Running: 1,
			State: client.MachineDraining, Keys: []string{"sparc"}, Attrs: map[string]float64{"mem": 32, "rating": 8},
			Mounts: []string{"/usr/fsys/fs1"},
		},
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

func sampleServers() []client.Server {
	return []client.Server{
		{Name: "s2", Address: "10.0.0.2:4647", HTTP: "10.0.0.2:4646", Role: "follower", Term: 5, LastIndex: 1041, Leader: "s1"},
		{Name: "s1", Address: "10.0.0.1:4647", HTTP: "10.0.0.1:4646", Role: "leader", Term: 5, LastIndex: 1042, Leader: "s1"},
		{Name: "s3", Address: "10.0.0.3:4647", Error: "connection refused"},
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"jobs.golden", func(b *bytes.Buffer) error { return renderJobs(b, sampleJobs()) }},
		{"jobs.json.golden", func(b *bytes.Buffer) error { return renderJobsJSON(b, sampleJobs()) }},
		{"jobs_empty.golden", func(b *bytes.Buffer) error { return renderJobs(b, nil) }},
		{"jobs_empty.json.golden", func(b *bytes.Buffer) error { return renderJobsJSON(b, nil) }},
		{"machines.golden", func(b *bytes.Buffer) error { return renderMachines(b, sampleMachines()) }},
		{"machines.json.golden", func(b *bytes.Buffer) error { return renderMachinesJSON(b, sampleMachines()) }},
		{"why.golden", func(b *bytes.Buffer) error {
			return renderWhy(b, client.Job{Name: "test1", Owner: "tclark"}, sampleWhy())
		}},
		{"why.json.golden", func(b *bytes.Buffer) error { return renderWhyJSON(b, sampleWhy()) }},
		{"why_none.golden", func(b *bytes.Buffer) error { return renderWhy(b, client.Job{Name: "test1", Owner: "tclark"}, nil) }},
		{"why_none.json.golden", func(b *bytes.Buffer) error { return renderWhyJSON(b, nil) }},
		{"servers.golden", func(b *bytes.Buffer) error { return renderServers(b, sampleServers()) }},
		{"servers.json.golden", func(b *bytes.Buffer) error { return renderServersJSON(b, sampleServers()) }},
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
	if err := renderJobs(&bytes.Buffer{}, jobs); err != nil {
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
		{"failed to exec", client.Instance{State: client.InstanceFailed, Error: "exec: no such file"}, "failed(exec)"},
		{"signaled", client.Instance{State: client.InstanceSignaled, Signal: "KILL"}, "signaled(KILL)"},
		{"signaled without name", client.Instance{State: client.InstanceSignaled}, "signaled(-)"},
		{"killed", client.Instance{State: client.InstanceKilled, Signal: "TERM"}, "killed"},
		{"lost", client.Instance{State: client.InstanceLost}, "lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := instanceState(tt.in); got != tt.want {
				t.Errorf("instanceState() = %q, want %q", got, tt.want)
			}
		})
	}
}
