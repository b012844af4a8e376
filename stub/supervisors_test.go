package stub

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// supervisorOf returns the supervisor process recorded for attempt k.
func supervisorOf(t *testing.T, r *restartable, k client.AttemptRef) procID {
	t.Helper()
	return readState(t, r.supDir(k)).Supervisor
}

// A stub's attempts share one supervisor host, which outlives the stub
// while a job runs, serves the next stub on the same DataDir, and exits
// once no stub holds it and no job runs.
func TestSupervisorHost(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		c := stubClient(t, r.s)
		first, second := gatedJob(1), gatedJob(2)
		for _, req := range []client.StartRequest{first, second} {
			killOnCleanup(t, mustRun(t, c, req))
		}
		host := supervisorOf(t, r, keyOf(first))
		if got := supervisorOf(t, r, keyOf(second)); got != host {
			t.Fatalf("second attempt's supervisor = %+v, want the first's, %+v", got, host)
		}
		if host.PID == os.Getpid() {
			t.Fatal("the supervisor host is the stub's own process")
		}
		hosts := hostsReaped(r.s)
		if len(hosts) != 1 {
			t.Fatalf("the stub started %d hosts, want 1", len(hosts))
		}

		// The stub goes; the host stays for its jobs and serves the next stub.
		r.restart()
		if !host.runs() {
			t.Fatal("the host did not outlive the stub")
		}
		third := gatedJob(3)
		killOnCleanup(t, mustRun(t, stubClient(t, r.s), third))
		if got := supervisorOf(t, r, keyOf(third)); got != host {
			t.Fatalf("the next stub's attempt runs under %+v, want the host %+v", got, host)
		}

		// The jobs end and the stub stops: the host exits.
		for _, req := range []client.StartRequest{first, second, third} {
			if err := os.WriteFile(filepath.Join(r.execDir(keyOf(req)), "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if term := srv.waitTerm(t, keyOf(req)); term[len(term)-1].ExitCode != 3 {
				t.Errorf("TERM of %s = %+v, want exit 3", keyOf(req), term[len(term)-1])
			}
		}
		r.stop()
		<-hosts[0]
		if host.runs() {
			t.Fatal("the host runs on with no stub and no job")
		}
	})
}

// In a host of several jobs, a job's end kills its own orphans and not
// another running job's: an orphan that left its job's process group is
// known by the NETMGR_ variables in its environment.
func TestSupervisorHostOrphansStayWithTheirJob(t *testing.T) {
	eachMode(t, func(t *testing.T, cgroupParent string) {
		srv := newFakeServer(t, 0)
		r := newRestartable(t, srv, cgroupParent)
		c := stubClient(t, r.s)
		// b's subshell ends at once, so its setsid child is an orphan,
		// handed to the host, while b runs on.
		b := shJob(2, 0, `(setsid sleep 1002 & echo $! > orphan.pid); while [ ! -e go ]; do sleep 0.05; done; exit 3`)
		killOnCleanup(t, mustRun(t, c, b))
		orphan := readPID(t, filepath.Join(r.execDir(keyOf(b)), "orphan.pid"))
		t.Cleanup(func() { _ = unix.Kill(orphan, unix.SIGKILL) })

		a := shJob(1, 0, `setsid sleep 1001 & echo $! > orphan.pid; exit 0`)
		mustStart(t, c, a)
		srv.waitTerm(t, keyOf(a))
		if own := readPID(t, filepath.Join(r.execDir(keyOf(a)), "orphan.pid")); alive(own) {
			t.Errorf("job a's orphan %d survives a", own)
		}
		if !alive(orphan) {
			t.Fatalf("job b's orphan %d was killed when a ended", orphan)
		}

		if err := os.WriteFile(filepath.Join(r.execDir(keyOf(b)), "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		srv.waitTerm(t, keyOf(b))
		res, err := readResult(r.supDir(keyOf(b)))
		if err != nil {
			t.Fatal(err)
		}
		if alive(orphan) || !slices.ContainsFunc(res.Leftovers, func(l supervisor.Leftover) bool { return l.PID == orphan }) {
			t.Errorf("job b's orphan %d: alive %v, leftovers %+v; want killed and reported", orphan, alive(orphan), res.Leftovers)
		}
	})
}

// readPID reads the pid a job wrote to path, waiting for it.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testwait.For(t, waitTimeout, path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// Where no supervisor host can start, each attempt gets a supervisor
// process of its own, which runs, signals and reports the job alike.
func TestAttemptWithoutHost(t *testing.T) {
	srv := newFakeServer(t, 0)
	r := newRestartable(t, srv, NoCgroups)
	// A directory where the host's log goes: no host can start.
	if err := os.MkdirAll(filepath.Join(r.cfg.DataDir, attemptsDir, "host.log"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := stubClient(t, r.s)
	req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/sleep", Args: []string{"1000"}}
	k := keyOf(req)
	pid := mustRun(t, c, req)
	killOnCleanup(t, pid)
	sup := supervisorOf(t, r, k)
	if _, err := os.Stat(filepath.Join(r.supDir(k), "sock")); err != nil {
		t.Fatalf("the attempt's own supervisor serves no socket: %v", err)
	}
	r.restart() // the supervisor of one attempt outlives the stub as the host does
	if !sup.runs() {
		t.Fatal("the attempt's supervisor did not outlive the stub")
	}
	if err := stubClient(t, r.s).Signal(t.Context(), client.SignalRequest{JobID: 1, Attempt: 1, Signal: "TERM"}); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if term := srv.waitTerm(t, k); term[len(term)-1].Signal != "TERM" {
		t.Errorf("TERM = %+v, want signal TERM", term[len(term)-1])
	}
	testwait.For(t, waitTimeout, "the attempt's supervisor to exit", func() bool { return !sup.runs() })
}

// A supervisor directory no outbox record names (the stub died between
// the host's start and the CHILD_REGISTER) is adopted: the next stub
// records the REGISTER, with the restartability the host kept in
// state.json, there being no spec.json for a host's attempt.
func TestAdoptKeepsRestartable(t *testing.T) {
	// The test process stands in for the host, a live process for the job.
	self := identify(t, os.Getpid())
	job := exec.Command("/bin/sleep", "1000")
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Process.Kill(); _ = job.Wait() })
	jobID := identify(t, job.Process.Pid)
	dataDir := t.TempDir()
	k := client.AttemptRef{JobID: 7, Attempt: 1}
	writeState(t, filepath.Join(dataDir, attemptsDir, k.String()), stateFile{
		Supervisor: self, Job: jobID, StartedAt: time.Now().UTC(), Restartable: true,
	})

	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{DataDir: dataDir, Servers: []string{srv.addr()}, CgroupParent: NoCgroups})
	if pid := waitRegister(t, srv, k); pid != job.Process.Pid {
		t.Fatalf("adopted REGISTER names pid %d, want %d", pid, job.Process.Pid)
	}
	s.runner.mu.Lock()
	a := s.runner.attempts[k]
	s.runner.mu.Unlock()
	if a == nil || !a.rec.Restartable {
		t.Fatalf("adopted attempt = %+v, want it known and restartable", a)
	}
}

// A supervisor host that dies takes its attempts with it (each is lost),
// and the stub's next start brings up a new host.
func TestSupervisorHostRespawned(t *testing.T) {
	srv := newFakeServer(t, 0)
	r := newRestartable(t, srv, NoCgroups)
	c := stubClient(t, r.s)
	first := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/sleep", Args: []string{"1000"}}
	pid := mustRun(t, c, first)
	killOnCleanup(t, pid)
	host := supervisorOf(t, r, keyOf(first))
	if err := unix.Kill(host.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if term := srv.waitTerm(t, keyOf(first)); term[len(term)-1].Error != lostError {
		t.Fatalf("TERM = %+v, want %q", term[len(term)-1], lostError)
	}

	next := client.StartRequest{JobID: 2, Attempt: 1, Binary: "/bin/true"}
	mustStart(t, c, next)
	if term := srv.waitTerm(t, keyOf(next)); term[len(term)-1].ExitCode != 0 || term[len(term)-1].Error != "" {
		t.Fatalf("TERM = %+v, want exit 0", term[len(term)-1])
	}
	if got := supervisorOf(t, r, keyOf(next)); got == host {
		t.Fatalf("the next attempt ran under %+v, want a new host (the dead one was %+v)", got, host)
	}
	if n := len(hostsReaped(r.s)); n != 2 {
		t.Errorf("the stub started %d hosts, want 2", n)
	}
}
