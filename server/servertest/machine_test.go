package servertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

func TestIsSupervisorOf(t *testing.T) {
	prefix := "/d/stub1/data/"
	tests := []struct {
		name string
		args []string
		cwd  string
		want bool
	}{
		{"supervisor under the data dir", []string{"netmgr", "supervise", "--dir", "/d/stub1/data/attempts/1.0.1"}, "", true},
		{"unclean path", []string{"netmgr", "supervise", "--dir", "/d/stub1//data/attempts/1.0.1/"}, "", true},
		{"supervisor host", []string{"netmgr", "supervise", "--host", "/d/stub1/data/attempts"}, "", true},
		{"supervisor host by its directory", []string{"netmgr", "supervise"}, "/d/stub1/data/attempts", true},
		{"another stub's supervisor", []string{"netmgr", "supervise", "--dir", "/d/stub10/data/attempts/1.0.1"}, "/d/stub10/data/attempts/1.0.1", false},
		{"another stub's supervisor host", []string{"netmgr", "supervise", "--host", "/d/stub10/data/attempts"}, "/d/stub10/data/attempts", false},
		{"not a supervisor", []string{"netmgr", "stub", "--dir", "/d/stub1/data/attempts/1.0.1"}, "/d/stub1/data", false},
		{"no dir", []string{"netmgr", "supervise", "--dir"}, "", false},
		{"a job", []string{"/bin/sleep", "600"}, "/d/stub1/data", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isSupervisorOf(tt.args, tt.cwd, prefix); got != tt.want {
				t.Errorf("isSupervisorOf(%q, %q) = %v, want %v", tt.args, tt.cwd, got, tt.want)
			}
		})
	}
}

// startSession starts /bin/sh running script in dir ("" for ours) in a
// session of its own with extra as its $0 and arguments (so they show in
// its command line), and kills and reaps it at cleanup.
func startSession(t *testing.T, dir, script string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script}, extra...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// alive reports whether pid is a process that is not a zombie.
func alive(fsys procfs.FS, pid int) bool {
	p, err := fsys.Proc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z" && st.State != "X"
}

// A machine's loss kills the stub, its supervisors (found by their --dir
// or their working directory) and their jobs, even a job in a session of
// its own, and nothing of another stub.
func TestKillMachine(t *testing.T) {
	fsys, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "stub1", "data")
	attempts := filepath.Join(data, "attempts")
	if err := os.MkdirAll(attempts, 0o755); err != nil {
		t.Fatal(err)
	}
	stub := startSession(t, "", "sleep 600; :")
	sup := startSession(t, "", "sleep 600 & setsid sleep 600 & wait",
		"supervise", "--dir", filepath.Join(attempts, "1.0.1"))
	host := startSession(t, attempts, "sleep 600 & wait", "supervise", "--host", attempts)
	other := startSession(t, "", "sleep 600 & wait",
		"supervise", "--dir", filepath.Join(dir, "stub10", "data", "attempts", "1.0.1"))

	// The stub's shell and sleep, the supervisor's shell and two jobs,
	// the supervisor host's shell and its job.
	var before []int
	err = poll(10*time.Second, func(context.Context) bool {
		before, err = machineProcs(fsys, stub.Process.Pid, data, map[int]bool{})
		return err == nil && len(before) == 7
	})
	if err != nil {
		t.Fatalf("found %v before the kill, want 7 processes: %v", before, err)
	}
	for _, p := range []*exec.Cmd{sup, host} {
		if !slices.Contains(before, p.Process.Pid) {
			t.Errorf("the supervisor %d is not among %v", p.Process.Pid, before)
		}
	}
	if slices.Contains(before, other.Process.Pid) {
		t.Errorf("another stub's supervisor %d is among %v", other.Process.Pid, before)
	}

	at, err := killMachine(stub.Process.Pid, data)
	if err != nil {
		t.Fatal(err)
	}
	if at.IsZero() {
		t.Error("got no kill time")
	}
	for _, pid := range before {
		if alive(fsys, pid) {
			t.Errorf("process %d is alive after the kill", pid)
		}
	}
	if !alive(fsys, other.Process.Pid) {
		t.Errorf("another stub's supervisor %d was killed", other.Process.Pid)
	}
}
