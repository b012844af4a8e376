package stub

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		in      string
		bytes   bool
		want    Threshold
		wantErr bool
	}{
		{"256MiB,1%", true, DefaultMinFreeDisk, false},
		{"1%", true, Threshold{Percent: 1}, false},
		{"0.5%", true, Threshold{Percent: 0.5}, false},
		{"2G", true, Threshold{Amount: 2 << 30}, false},
		{"512k", true, Threshold{Amount: 512 << 10}, false},
		{"1.5GiB", true, Threshold{Amount: 3 << 29}, false},
		{"4096", true, Threshold{Amount: 4096}, false},
		{"1 MB", true, Threshold{Amount: 1 << 20}, false},
		{"0", true, Threshold{Off: true}, false},
		{"1000,1%", false, DefaultMinFreeInodes, false},
		{"50", false, Threshold{Amount: 50}, false},
		{"", true, Threshold{}, true},
		{"1%,2%", true, Threshold{}, true},
		{"101%", true, Threshold{}, true},
		{"12 parsecs", true, Threshold{}, true},
		{"1k", false, Threshold{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseThreshold(tt.in, tt.bytes)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseThreshold(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("ParseThreshold(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestThresholdMin(t *testing.T) {
	tests := []struct {
		name  string
		t     Threshold
		total uint64
		want  uint64
	}{
		{"a small disk keeps 1%", DefaultMinFreeDisk, 10 << 30, 10 << 30 / 100},
		{"a large disk keeps 256 MiB", DefaultMinFreeDisk, 1 << 40, 256 << 20},
		{"percent only", Threshold{Percent: 10}, 1000, 100},
		{"amount only", Threshold{Amount: 7}, 1000, 7},
		{"off", Threshold{Off: true}, 1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.min(tt.total); got != tt.want {
				t.Errorf("min(%d) = %d, want %d", tt.total, got, tt.want)
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 512: "512 B", 1024: "1.0 KiB", 12 << 10: "12 KiB", 3<<20 + 400<<10: "3.4 MiB", 5 << 30: "5.0 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// testWatch is a health watch of execDir and a fresh data dir, which only
// looks when asked (recheck).
func testWatch(t *testing.T, execDir string, cfg Config) *healthWatch {
	t.Helper()
	cfg.ExecDir, cfg.DataDir, cfg.DiskCheckEvery = execDir, t.TempDir(), time.Hour
	return newHealthWatch(cfg, slog.New(slog.DiscardHandler))
}

// TestHealthWatchFullDisk fills a real file system (a small tmpfs) under
// the exec dir: the watch reports it full, and healthy again once the
// filler is gone.
func TestHealthWatchFullDisk(t *testing.T) {
	dir := mountTmpfs(t, 256<<10, 0)
	h := testWatch(t, dir, Config{})
	if p := h.problem(); p != "" {
		t.Fatalf("empty exec dir: problem %q, want none", p)
	}
	fill(t, filepath.Join(dir, "filler"))
	if p := h.recheck(); p != "exec dir full: 0 B free" {
		t.Errorf("full exec dir: problem %q, want %q", p, "exec dir full: 0 B free")
	}
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if p := h.recheck(); p != "" {
		t.Errorf("after the filler is removed: problem %q, want none", p)
	}

	// Under a threshold, before it is full.
	h = testWatch(t, dir, Config{MinFreeDisk: Threshold{Amount: 200 << 10}})
	if err := os.WriteFile(filepath.Join(dir, "half"), make([]byte, 128<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := h.recheck(); !strings.HasPrefix(p, "exec dir full: ") || !strings.Contains(p, "under the minimum of 200 KiB") {
		t.Errorf("exec dir under its threshold: problem %q, want it full under the minimum of 200 KiB", p)
	}
}

// TestHealthWatchInodes uses up a real file system's inodes.
func TestHealthWatchInodes(t *testing.T) {
	dir := mountTmpfs(t, 1<<20, 64)
	h := testWatch(t, dir, Config{})
	if p := h.problem(); p != "" {
		t.Fatalf("fresh exec dir: problem %q, want none", p)
	}
	sub := filepath.Join(dir, "many")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fillInodes(t, sub)
	if p := h.recheck(); p != "exec dir out of inodes: 0 free" {
		t.Errorf("problem %q, want %q", p, "exec dir out of inodes: 0 free")
	}
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if p := h.recheck(); p != "" {
		t.Errorf("after the files are removed: problem %q, want none", p)
	}
}

// TestHealthCheckProgram runs real health-check programs.
func TestHealthCheckProgram(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		program string
		want    string // prefix of the problem; "" for none
	}{
		{"passes", script("ok", "exit 0"), ""},
		{"fails with a reason", script("fan", "echo; echo 'ERROR: fan 2 failed'; echo second line; exit 1"), "health check: ERROR: fan 2 failed"},
		{"prints but exits 0", script("warn", "echo 'scratch is read-only' >&2"), "health check: scratch is read-only"},
		{"fails silently", script("silent", "exit 3"), "health check: " + filepath.Join(dir, "silent") + " exit status 3"},
		{"cannot run", filepath.Join(dir, "missing"), "health check: cannot run " + filepath.Join(dir, "missing")},
		{"hangs", script("hang", "sleep 30"), "health check: " + filepath.Join(dir, "hang") + " timed out after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runHealthCheck(context.Background(), tt.program, 300*time.Millisecond)
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Errorf("problem %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHealthCheckDrainsAndUndrains runs a stub with a health check that
// fails while a file exists: its lease renewals carry the problem, and
// stop carrying it once the check passes again.
func TestHealthCheckDrainsAndUndrains(t *testing.T) {
	srv := newFakeServer(t, 0)
	srv.mu.Lock()
	srv.grantLeases = true
	srv.mu.Unlock()
	dir := t.TempDir()
	flag := filepath.Join(dir, "broken")
	check := filepath.Join(dir, "check")
	if err := os.WriteFile(check, []byte("#!/bin/sh\n[ -e "+flag+" ] && { echo 'ERROR: GPU 0 lost'; exit 1; }\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, HealthCheck: check, HealthCheckEvery: 50 * time.Millisecond})
	problem := func() string {
		req, ok := srv.lastLease()
		if !ok {
			return "none yet"
		}
		return req.Problem
	}
	testwait.For(t, waitTimeout, "a healthy renewal", func() bool { return problem() == "" })
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitTimeout, "a renewal carrying the health check's reason", func() bool { return problem() == "health check: ERROR: GPU 0 lost" })

	// A Start meanwhile fails as the machine's fault, starting nothing.
	req := shJob(7, 0, "echo ran > ran")
	if reg := mustStart(t, stubClient(t, s), req); reg != nil {
		t.Errorf("Start on an unhealthy machine answered a REGISTER %+v, want none", reg)
	}
	evs := srv.waitTerm(t, keyOf(req))
	term := evs[len(evs)-1]
	if !term.MachineFault || term.Error != "not started: health check: ERROR: GPU 0 lost" {
		t.Errorf("CHILD_TERM %+v, want a machine fault saying why", term)
	}

	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitTimeout, "a healthy renewal again", func() bool { return problem() == "" })
}

// TestJobFailingOnFullDiskIsMachineFault runs a job whose output cannot
// be written on a full exec dir the stub has not looked at yet: it exits
// 1, and its CHILD_TERM says the machine is at fault.
func TestJobFailingOnFullDiskIsMachineFault(t *testing.T) {
	srv := newFakeServer(t, 0)
	execDir := mountTmpfs(t, 256<<10, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecDir: execDir, DiskCheckEvery: time.Hour})
	c := stubClient(t, s)

	fill(t, filepath.Join(execDir, "filler"))
	req := shJob(1, 0, "echo hello")
	mustRun(t, c, req)
	evs := srv.waitTerm(t, keyOf(req))
	term := evs[len(evs)-1]
	if term.ExitCode == 0 || !term.MachineFault || !strings.Contains(term.Error, "exec dir full: 0 B free") {
		t.Errorf("CHILD_TERM %+v, want a failure marked as a machine fault, naming the full exec dir", term)
	}
	if p := s.health.problem(); p != "exec dir full: 0 B free" {
		t.Errorf("after the failure the stub's problem is %q, want the full exec dir", p)
	}

	// The next Start is refused as a machine fault.
	next := shJob(2, 0, "echo hello")
	if reg := mustStart(t, c, next); reg != nil {
		t.Errorf("Start on a full exec dir answered a REGISTER %+v, want none", reg)
	}
	evs = srv.waitTerm(t, keyOf(next))
	if term := evs[len(evs)-1]; !term.MachineFault || term.Error != "not started: exec dir full: 0 B free" {
		t.Errorf("CHILD_TERM %+v, want a machine fault: not started", term)
	}

	// A job that fails for its own sake on a healthy disk is no machine
	// fault.
	if err := os.Remove(filepath.Join(execDir, "filler")); err != nil {
		t.Fatal(err)
	}
	s.health.recheck()
	own := shJob(3, 0, "exit 4")
	mustRun(t, c, own)
	evs = srv.waitTerm(t, keyOf(own))
	if term := evs[len(evs)-1]; term.ExitCode != 4 || term.MachineFault {
		t.Errorf("CHILD_TERM %+v, want exit 4 and no machine fault", term)
	}
}

// TestStartOutOfInodesIsMachineFault uses up the exec dir's inodes: a
// Start whose directory cannot be made fails as a machine fault and
// drains the machine until directories can be made again.
func TestStartOutOfInodesIsMachineFault(t *testing.T) {
	srv := newFakeServer(t, 0)
	execDir := mountTmpfs(t, 1<<20, 128)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecDir: execDir, DiskCheckEvery: 50 * time.Millisecond,
		MinFreeInodes: Threshold{Off: true}})
	c := stubClient(t, s)
	many := filepath.Join(execDir, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	fillInodes(t, many)
	var term client.ChildEvent
	for job := uint64(1); ; job++ { // directories made ahead, if any, go first
		req := shJob(job, 0, "true")
		if reg := mustStart(t, c, req); reg != nil {
			srv.waitTerm(t, keyOf(req))
			if job > 2*kitsAhead {
				t.Fatalf("%d Starts ran with no inode left", job)
			}
			continue
		}
		evs := srv.waitTerm(t, keyOf(req))
		term = evs[len(evs)-1]
		break
	}
	if !term.MachineFault || !strings.Contains(term.Error, "no space left on device") {
		t.Errorf("CHILD_TERM %+v, want a machine fault naming the full file system", term)
	}
	if p := s.health.problem(); !strings.HasPrefix(p, "cannot make attempt files in the exec dir: ") {
		t.Errorf("problem %q, want the failure to make attempt files", p)
	}
	if err := os.RemoveAll(many); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitTimeout, "the machine healthy again", func() bool { return s.health.problem() == "" })
}
