package stub

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// eachMode runs f once with jobs in cgroups, skipping with the reason
// where the host offers no writable cgroup v2 tree, and once with jobs in
// process groups only. f gets the Config.CgroupParent to use.
func eachMode(t *testing.T, f func(t *testing.T, cgroupParent string)) {
	t.Run("cgroup", func(t *testing.T) {
		if base, why := detectCgroups("", t.TempDir()); base == "" {
			t.Skipf("no writable cgroup v2 tree: %s", why)
		} else {
			_ = os.Remove(base)
		}
		f(t, "")
	})
	t.Run("process group", func(t *testing.T) { f(t, NoCgroups) })
}

// restartable is a stub that can be restarted on the same directories.
type restartable struct {
	t   *testing.T
	cfg Config
	s   *Stub
}

func newRestartable(t *testing.T, srv *fakeServer, cgroupParent string) *restartable {
	t.Helper()
	r := &restartable{t: t, cfg: Config{
		DataDir: t.TempDir(), ExecDir: t.TempDir(), Servers: []string{srv.addr()}, CgroupParent: cgroupParent,
	}}
	r.s = newTestStub(t, r.cfg)
	return r
}

// restart shuts the stub down and starts a new one on the same DataDir.
func (r *restartable) restart() {
	r.t.Helper()
	r.stop()
	r.start()
}

func (r *restartable) stop() {
	r.t.Helper()
	if err := r.s.Shutdown(); err != nil {
		r.t.Fatalf("Shutdown: %v", err)
	}
}

func (r *restartable) start() {
	r.t.Helper()
	r.s = newTestStub(r.t, r.cfg)
}

// execDir and supDir are attempt k's directories.
func (r *restartable) execDir(k client.AttemptRef) string {
	return filepath.Join(r.cfg.ExecDir, r.cfg.clusterID(), k.String())
}
func (r *restartable) supDir(k client.AttemptRef) string {
	return filepath.Join(r.cfg.DataDir, attemptsDir, k.String())
}

// waitRegister waits for the REGISTER of k and returns the job's pid.
func waitRegister(t *testing.T, srv *fakeServer, k client.AttemptRef) int {
	t.Helper()
	var evs []client.ChildEvent
	testwait.For(t, waitTimeout, "REGISTER of "+k.String(), func() bool { evs = srv.events(k); return len(evs) > 0 })
	if evs[0].Kind != client.ChildRegister {
		t.Fatalf("first event = %+v, want REGISTER", evs[0])
	}
	return evs[0].PID
}

// gatedJob runs until the file "go" appears in its exec dir, then exits 3.
func gatedJob(job uint64) client.StartRequest {
	return shJob(job, 0, `while [ ! -e go ]; do sleep 0.05; done; exit 3`)
}

// distinct drops the repeats of events: delivery is at least once, and an
// event a server took just before the stub stopped is sent again by the
// next stub.
func distinct(evs []client.ChildEvent) []client.ChildEvent {
	var out []client.ChildEvent
	for _, ev := range evs {
		if !slices.ContainsFunc(out, func(o client.ChildEvent) bool { return reflect.DeepEqual(o, ev) }) {
			out = append(out, ev)
		}
	}
	return out
}

// killOnCleanup SIGKILLs pid's group at the end of the test, so that a
// failing test leaves no job behind.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = unix.Kill(-pid, unix.SIGKILL) })
}

func TestJobSurvivesStubRestart(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		req := gatedJob(1)
		k := keyOf(req)
		pid := mustRun(t, stubClient(t, r.s), req)
		killOnCleanup(t, pid)

		r.restart()
		if !alive(pid) {
			t.Fatalf("job %d died with the stub", pid)
		}
		if err := os.WriteFile(filepath.Join(r.execDir(k), "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		evs := distinct(srv.waitTerm(t, k))
		if len(evs) != 2 {
			t.Fatalf("events = %+v, want one REGISTER and one TERM", evs)
		}
		if term := evs[1]; term.ExitCode != 3 || term.Signal != "" || term.Error != "" {
			t.Errorf("TERM = %+v, want exit 3", term)
		}
	})
}

func TestEndWhileNoStubRuns(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		req := gatedJob(1)
		k := keyOf(req)
		killOnCleanup(t, mustRun(t, stubClient(t, r.s), req))

		r.stop()
		if err := os.WriteFile(filepath.Join(r.execDir(k), "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, waitTimeout, "the supervisor's result", func() bool {
			_, err := readResult(r.supDir(k))
			return err == nil
		})
		if evs := distinct(srv.events(k)); len(evs) != 0 {
			t.Fatalf("events while no stub ran = %+v, want none: the REGISTER went in the answer", evs)
		}
		r.start()
		evs := srv.waitTerm(t, k)
		if term := evs[len(evs)-1]; term.ExitCode != 3 || term.Error != "" {
			t.Errorf("TERM = %+v, want exit 3", term)
		}
		// A third stub has nothing more to say about it.
		r.restart()
		mustStart(t, stubClient(t, r.s), req)
		if evs := distinct(srv.events(k)); len(evs) != 2 {
			t.Errorf("events = %+v, want one REGISTER and one TERM", evs)
		}
	})
}

func TestLimitsHoldWhileNoStubRuns(t *testing.T) {
	srv := newFakeServer(t, 0)
	r := newRestartable(t, srv, "")
	req := withLimits(shJob(1, 0, `sleep 3600`), 1, 0, 0)
	k := keyOf(req)
	killOnCleanup(t, mustRun(t, stubClient(t, r.s), req))
	r.stop()
	testwait.For(t, waitTimeout, "the supervisor's result", func() bool {
		_, err := readResult(r.supDir(k))
		return err == nil
	})
	r.start()
	evs := srv.waitTerm(t, k)
	term := evs[len(evs)-1]
	if want := "timeout: run limit of 1s exceeded"; term.Reason != want || term.Signal != "TERM" {
		t.Errorf("TERM = %+v, want signal TERM and reason %q", term, want)
	}
}

func TestSignalAfterRestart(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/sleep", Args: []string{"1000"}}
		k := keyOf(req)
		pid := mustRun(t, stubClient(t, r.s), req)
		killOnCleanup(t, pid)

		r.restart()
		ctx := context.Background()
		c := stubClient(t, r.s)
		sig := func(name string) {
			t.Helper()
			if err := c.Signal(ctx, client.SignalRequest{JobID: 1, Attempt: 1, Signal: name}); err != nil {
				t.Fatalf("Signal %s: %v", name, err)
			}
		}
		stopped := func() bool { state, err := procState(pid); return err == nil && state == 'T' }

		sig("STOP")
		testwait.For(t, waitTimeout, "the job to be stopped", stopped)
		sig("CONT")
		testwait.For(t, waitTimeout, "the job to run again", func() bool { return !stopped() })
		sig("TERM")
		evs := srv.waitTerm(t, k)
		if term := evs[len(evs)-1]; term.Signal != "TERM" || term.ExitCode != 128+15 {
			t.Errorf("TERM = %+v, want signal TERM", term)
		}
	})
}

func TestLeftoversKilledAndReported(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		// One child stays in the group; one leaves it with setsid, and is
		// orphaned to the supervisor when the shell exits.
		req := shJob(1, 0, `sleep 1000 & echo $! > bg.pid; setsid sleep 1001 & echo $! > setsid.pid; exit 0`)
		k := keyOf(req)
		mustStart(t, stubClient(t, r.s), req)
		evs := srv.waitTerm(t, k)
		if term := evs[len(evs)-1]; term.ExitCode != 0 || term.Error != "" {
			t.Fatalf("TERM = %+v, want exit 0", term)
		}
		res, err := readResult(r.supDir(k))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"bg.pid", "setsid.pid"} {
			b, err := os.ReadFile(filepath.Join(r.execDir(k), name))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if alive(pid) {
				t.Errorf("%s: process %d survives its job", name, pid)
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			reported := slices.ContainsFunc(res.Leftovers, func(l supervisor.Leftover) bool { return l.PID == pid })
			if !reported {
				t.Errorf("%s: leftovers = %+v, want process %d among them", name, res.Leftovers, pid)
			}
		}
	})
}

func TestUnverifiedSupervisorIsLost(t *testing.T) {
	self := identify(t, os.Getpid())
	tests := []struct {
		name  string
		alter func(id procID) procID
	}{
		{name: "recycled pid", alter: func(id procID) procID { id.StartTime++; return id }},
		{name: "earlier boot", alter: func(id procID) procID { id.BootID = "not-this-boot"; return id }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An unrelated live process stands in for the job.
			other := exec.Command("/bin/sleep", "1000")
			other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
			job := identify(t, other.Process.Pid)

			k := client.AttemptRef{JobID: uint64(i + 1), Attempt: 1}
			dataDir := t.TempDir()
			writeFakeAttempt(t, dataDir, k, stateFile{
				Supervisor: tt.alter(self), Job: tt.alter(job), StartedAt: time.Now().UTC(),
			})
			srv := newFakeServer(t, 0)
			newTestStub(t, Config{DataDir: dataDir, Servers: []string{srv.addr()}, CgroupParent: NoCgroups})

			evs := srv.waitTerm(t, k)
			term := evs[len(evs)-1]
			if term.Error != lostError || term.ExitCode == 0 {
				t.Errorf("TERM = %+v, want error %q and a non-zero exit code", term, lostError)
			}
			if !alive(other.Process.Pid) {
				t.Errorf("the unrelated process %d was killed", other.Process.Pid)
			}
		})
	}
}

// writeFakeAttempt records attempt k as started in dataDir's outbox and
// gives it a supervisor directory holding st.
func writeFakeAttempt(t *testing.T, dataDir string, k client.AttemptRef, st stateFile) {
	t.Helper()
	out, err := outbox.Open(filepath.Join(dataDir, "outbox.db"), filepath.Join(dataDir, attemptsDir))
	if err != nil {
		t.Fatal(err)
	}
	err = out.Record(k, &outbox.Record{PID: st.Job.PID, At: st.StartedAt})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	writeState(t, filepath.Join(dataDir, attemptsDir, k.String()), st)
}

func TestSupervisorKilled(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/sleep", Args: []string{"1000"}}
		k := keyOf(req)
		pid := mustRun(t, stubClient(t, r.s), req)
		killOnCleanup(t, pid)
		st := readState(t, r.supDir(k))
		if st.Job.PID != pid {
			t.Fatalf("state's job pid = %d, want %d", st.Job.PID, pid)
		}
		if err := unix.Kill(st.Supervisor.PID, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		evs := srv.waitTerm(t, k)
		if term := evs[len(evs)-1]; term.Error != lostError || term.ExitCode == 0 {
			t.Errorf("TERM = %+v, want error %q and a non-zero exit code", term, lostError)
		}
		testwait.For(t, waitTimeout, "the orphaned job to be killed", func() bool { return !alive(pid) })
	})
}
