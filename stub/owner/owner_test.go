package owner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/stub/owner"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// waitVerdict polls w until its verdict is want, failing after 10 s.
func waitVerdict(t *testing.T, w *owner.Watch, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.Verdict() != want {
		if time.Now().After(deadline) {
			t.Fatalf("verdict %q, want %q within 10s", w.Verdict(), want)
		}
		select {
		case <-w.Changed():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// run starts w until the test ends.
func run(t *testing.T, w *owner.Watch) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestUtmpRoundTrip(t *testing.T) {
	at := time.Unix(1_700_000_000, 123_000)
	recs := []owner.UtmpRecord{
		{Type: owner.UtmpUserProcess, PID: 42, Line: "tty1", User: "alice", Host: "", Time: at},
		{Type: owner.UtmpDeadProcess, PID: 43, Line: "pts/0", User: "", Host: "10.0.0.1", Time: at.Add(time.Second)},
	}
	data := owner.MarshalUtmp(recs...)
	if len(data) != 2*owner.UtmpRecordSize {
		t.Fatalf("got %d bytes, want %d", len(data), 2*owner.UtmpRecordSize)
	}
	got, err := owner.ParseUtmp(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if got[i].Type != recs[i].Type || got[i].PID != recs[i].PID || got[i].Line != recs[i].Line ||
			got[i].User != recs[i].User || got[i].Host != recs[i].Host || !got[i].Time.Equal(recs[i].Time) {
			t.Errorf("record %d: got %+v, want %+v", i, got[i], recs[i])
		}
	}
	if _, err := owner.ParseUtmp(data[:100]); !errors.Is(err, owner.ErrBadUtmp) {
		t.Errorf("a torn record: got %v, want %v", err, owner.ErrBadUtmp)
	}
	// The host's own utmp, when it has one, is whole records.
	if real, err := os.ReadFile(owner.DefaultUtmp); err == nil {
		if _, err := owner.ParseUtmp(real); err != nil {
			t.Errorf("this host's %s: %v", owner.DefaultUtmp, err)
		}
	}
}

func TestSleepOnLogin(t *testing.T) {
	utmp := filepath.Join(t.TempDir(), "utmp")
	const hold = 400 * time.Millisecond
	w, err := owner.New(owner.Config{SleepOnLogin: hold, Utmp: utmp, Interval: 20 * time.Millisecond}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if v := w.Verdict(); v != "" {
		t.Fatalf("no utmp file: verdict %q, want awake", v)
	}
	run(t, w)

	// A stale entry of a process that is gone counts for nothing.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, utmp, owner.MarshalUtmp(owner.UtmpRecord{Type: owner.UtmpUserProcess, PID: int32(gone.Process.Pid), Line: "tty2", User: "bob", Time: time.Now()}))
	// A login: this process stands for the session's shell.
	writeFile(t, utmp, owner.MarshalUtmp(
		owner.UtmpRecord{Type: owner.UtmpUserProcess, PID: int32(gone.Process.Pid), Line: "tty2", User: "bob", Time: time.Now()},
		owner.UtmpRecord{Type: owner.UtmpUserProcess, PID: int32(os.Getpid()), Line: "tty1", User: "alice", Time: time.Now()},
	))
	waitVerdict(t, w, "console login")

	// The logout: the entry becomes DEAD_PROCESS. The machine stays asleep
	// for hold after it, then wakes.
	logout := time.Now()
	writeFile(t, utmp, owner.MarshalUtmp(owner.UtmpRecord{Type: owner.UtmpDeadProcess, PID: int32(os.Getpid()), Line: "tty1", Time: logout}))
	waitVerdict(t, w, "")
	if since := time.Since(logout); since < hold-50*time.Millisecond {
		t.Errorf("woke %v after the logout, want no sooner than %v", since, hold)
	}
}

func TestSleepOnInput(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "event0")
	writeFile(t, dev, nil)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dev, old, old); err != nil {
		t.Fatal(err)
	}
	const hold = 500 * time.Millisecond
	w, err := owner.New(owner.Config{SleepOnInput: hold, InputGlobs: []string{filepath.Join(dir, "event*"), filepath.Join(dir, "tty[0-9]*")}, Interval: 20 * time.Millisecond}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if v := w.Verdict(); v != "" {
		t.Fatalf("idle for an hour: verdict %q, want awake", v)
	}
	run(t, w)
	// The keyboard is used: the device's access time is now.
	used := time.Now()
	if err := os.Chtimes(dev, used, old); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, w, "keyboard or mouse used")
	waitVerdict(t, w, "")
	if since := time.Since(used); since < hold-50*time.Millisecond {
		t.Errorf("woke %v after the input, want no sooner than %v", since, hold)
	}
	// A terminal read from counts too.
	tty := filepath.Join(dir, "tty1")
	writeFile(t, tty, nil) // a new file's access time is now
	waitVerdict(t, w, "keyboard or mouse used")
}

func TestSleepOnLoad(t *testing.T) {
	loadavg := filepath.Join(t.TempDir(), "loadavg")
	writeFile(t, loadavg, []byte("0.50 0.40 0.30 1/100 999\n"))
	own := 0.0
	w, err := owner.New(owner.Config{SleepOnLoad: 2, LoadAvg: loadavg, Interval: 20 * time.Millisecond,
		OwnLoad: func() float64 { return own }}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if v := w.Verdict(); v != "" {
		t.Fatalf("load 0.5: verdict %q, want awake", v)
	}
	writeFile(t, loadavg, []byte("3.20 1.00 0.30 3/100 999\n"))
	run(t, w)
	waitVerdict(t, w, "load 3.2 > 2")
	writeFile(t, loadavg, []byte("3.00 1.00 0.30 3/100 999\n"))
	waitVerdict(t, w, "load 3.0 > 2")
}

// A watch with every detector off looks at nothing until a Reconfigure
// turns one on; from then it looks every Interval, and stops again when
// the detectors go off.
func TestWatchLooksOnlyWithADetectorOn(t *testing.T) {
	loadavg := filepath.Join(t.TempDir(), "loadavg")
	writeFile(t, loadavg, []byte("3.20 1.00 0.30 3/100 999\n"))
	w, err := owner.New(owner.Config{LoadAvg: loadavg, Interval: 20 * time.Millisecond}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)
	if err := w.Reconfigure(owner.Config{SleepOnLoad: 2, LoadAvg: loadavg, Interval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, w, "load 3.2 > 2")
	// Only a look on the watch's own ticks sees this.
	writeFile(t, loadavg, []byte("0.50 0.40 0.30 1/100 999\n"))
	waitVerdict(t, w, "")
	if err := w.Reconfigure(owner.Config{LoadAvg: loadavg, Interval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, w, "")
}

func TestSleepOnLoadLessOwnJobs(t *testing.T) {
	loadavg := filepath.Join(t.TempDir(), "loadavg")
	writeFile(t, loadavg, []byte("2.50 1.00 0.30 3/100 999\n"))
	// The stub's own job burns a CPU: the machine's load less its share
	// is under the threshold.
	w, err := owner.New(owner.Config{SleepOnLoad: 2, LoadAvg: loadavg, Interval: 20 * time.Millisecond,
		OwnLoad: func() float64 { return 1 }}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if v := w.Verdict(); v != "" {
		t.Fatalf("load 2.5 of which 1 our own: verdict %q, want awake", v)
	}
}

// TestGroupsLoad runs a CPU burner in its own process group and measures
// its share.
func TestGroupsLoad(t *testing.T) {
	burner := exec.Command("sh", "-c", "while :; do :; done")
	burner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := burner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = burner.Process.Kill(); _ = burner.Wait() })
	pgid := burner.Process.Pid
	share := owner.GroupsLoad(func() []int { return []int{pgid} })
	if got := share(); got != 0 {
		t.Errorf("first call: got %v, want 0", got)
	}
	// The burner shares a busy machine: a tenth of a CPU over a second is
	// proof enough that its time is counted.
	deadline := time.Now().Add(10 * time.Second)
	for {
		<-time.After(500 * time.Millisecond) // a measuring window, not a wait for a state
		got := share()
		if got > 0.1 && got < 2.5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("share %v, want the burner's CPU (0.1 to 2.5)", got)
		}
	}
	none := owner.GroupsLoad(func() []int { return nil })
	none()
	if got := none(); got != 0 {
		t.Errorf("no groups: got %v, want 0", got)
	}
}

func TestLoadMonitor(t *testing.T) {
	dir := t.TempDir()
	said := filepath.Join(dir, "said")
	script := filepath.Join(dir, "monitor.sh")
	writeFile(t, said, []byte("0.3\n"))
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat "+said+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := owner.New(owner.Config{SleepOnLoad: 2, LoadMonitor: script, MonitorEvery: 50 * time.Millisecond,
		LoadAvg: filepath.Join(dir, "no-loadavg"), Interval: 20 * time.Millisecond}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)
	for _, step := range []struct{ says, want string }{
		{"0.3", ""},
		{"4.25", "load 4.2 > 2"},
		{"sleep", "load monitor"},
		{"sleep owner at the console", "owner at the console"},
		{"wake", ""},
		{"nonsense", ""}, // counts as awake, and is logged
		{"sleep", "load monitor"},
	} {
		writeFile(t, said, []byte(step.says+"\n"))
		waitVerdict(t, w, step.want)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, c := range []owner.Config{{SleepOnLogin: -1}, {SleepOnInput: -1}, {SleepOnLoad: -1}} {
		if _, err := owner.New(c, quiet); !errors.Is(err, owner.ErrBadSetting) {
			t.Errorf("New(%+v): got %v, want %v", c, err, owner.ErrBadSetting)
		}
	}
	if (owner.Config{}).Enabled() {
		t.Errorf("the zero Config is enabled")
	}
}

func TestIdle(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "event0")
	writeFile(t, dev, nil)
	used := time.Now().Add(-90 * time.Minute)
	if err := os.Chtimes(dev, used, used); err != nil {
		t.Fatal(err)
	}
	w, err := owner.New(owner.Config{SleepOnInput: time.Minute, InputGlobs: []string{dev}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if idle, ok := w.Idle(now); !ok || idle < 89*time.Minute || idle > 91*time.Minute {
		t.Errorf("input 90 minutes ago: got idle %v %v, want 90m", idle, ok)
	}
	none, err := owner.New(owner.Config{SleepOnLoad: 2, LoadAvg: filepath.Join(dir, "loadavg")}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := none.Idle(now); ok {
		t.Errorf("a watch of the load alone knows the owner's idle time")
	}
	var nilWatch *owner.Watch
	if _, ok := nilWatch.Idle(now); ok {
		t.Errorf("no watch knows the owner's idle time")
	}
}
