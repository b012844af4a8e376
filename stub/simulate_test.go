package stub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// simStub starts a simulated stub reporting to srv.
func simStub(t *testing.T, srv *fakeServer, sim Simulation) *Stub {
	t.Helper()
	return newTestStub(t, Config{Servers: []string{srv.addr()}, Simulate: &sim})
}

// sendSignal asks s to signal attempt k, failing the test on error.
func sendSignal(t *testing.T, s *Stub, k client.AttemptRef, sig string, grace time.Duration) {
	t.Helper()
	err := stubClient(t, s).Signal(context.Background(), client.SignalRequest{
		JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt, Signal: sig, GraceMS: grace.Milliseconds(),
	})
	if err != nil {
		t.Fatalf("Signal %s %s: %v", sig, k, err)
	}
}

// lastTerm waits for the CHILD_TERM of k and returns the attempt's
// distinct events, checking that a REGISTER with a simulated pid came
// first.
func lastTerm(t *testing.T, srv *fakeServer, k client.AttemptRef) client.ChildEvent {
	t.Helper()
	evs := distinct(srv.waitTerm(t, k))
	if len(evs) != 2 || evs[0].Kind != client.ChildRegister {
		t.Fatalf("events of %s = %+v, want one REGISTER and one TERM", k, evs)
	}
	if pid := evs[0].PID; pid <= 1<<22 {
		t.Errorf("REGISTER pid = %d, want a simulated pid above PID_MAX_LIMIT (%d)", pid, 1<<22)
	}
	return evs[1]
}

func TestSimulatedJobs(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := simStub(t, srv, Simulation{RunTime: time.Hour})
	c := stubClient(t, s)

	tests := []struct {
		name    string
		req     client.StartRequest
		signals []string // sent in order once the attempt runs
		grace   time.Duration
		want    client.ChildEvent // ExitCode, Signal, Reason of the TERM
	}{
		{name: "TERM", req: client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/true"},
			signals: []string{"TERM"}, want: client.ChildEvent{ExitCode: 143, Signal: "TERM"}},
		{name: "KILL", req: client.StartRequest{JobID: 2, Attempt: 1, Binary: "true"},
			signals: []string{"KILL"}, want: client.ChildEvent{ExitCode: 137, Signal: "KILL"}},
		{name: "STOP and CONT pause and resume", req: client.StartRequest{JobID: 3, Attempt: 1, Binary: "/bin/true"},
			signals: []string{"STOP", "CONT", "INT"}, want: client.ChildEvent{ExitCode: 130, Signal: "INT"}},
		{name: "ignored signal", req: client.StartRequest{JobID: 4, Attempt: 1, Binary: "/bin/true"},
			signals: []string{"WINCH", "HUP"}, want: client.ChildEvent{ExitCode: 129, Signal: "HUP"}},
		{name: "KILL after grace", req: client.StartRequest{JobID: 5, Attempt: 1, Binary: "/bin/true"},
			signals: []string{"STOP"}, grace: 50 * time.Millisecond, want: client.ChildEvent{ExitCode: 137, Signal: "KILL"}},
		{name: "run limit", req: client.StartRequest{JobID: 6, Attempt: 1, Binary: "/bin/true", MaxRunSeconds: 1},
			want: client.ChildEvent{ExitCode: 143, Signal: "TERM", Reason: "timeout: run limit of 1s exceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := keyOf(tt.req)
			mustRun(t, c, tt.req)
			for _, sig := range tt.signals {
				sendSignal(t, s, k, sig, tt.grace)
			}
			got := lastTerm(t, srv, k)
			if got.ExitCode != tt.want.ExitCode || got.Signal != tt.want.Signal || got.Reason != tt.want.Reason {
				t.Errorf("TERM = exit %d signal %q reason %q, want exit %d signal %q reason %q",
					got.ExitCode, got.Signal, got.Reason, tt.want.ExitCode, tt.want.Signal, tt.want.Reason)
			}
		})
	}
}

func TestSimulatedRunTime(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := simStub(t, srv, Simulation{RunTime: 20 * time.Millisecond})
	c := stubClient(t, s)
	pids := make(map[int]bool)
	for i := range 5 {
		req := client.StartRequest{JobID: 1, Instance: i, Attempt: 1, Binary: "/bin/true"}
		pids[mustRun(t, c, req)] = true
		if got := lastTerm(t, srv, keyOf(req)); got.ExitCode != 0 || got.Signal != "" || got.Error != "" {
			t.Errorf("TERM of %s = %+v, want exit 0", keyOf(req), got)
		}
	}
	if len(pids) != 5 {
		t.Errorf("5 attempts got pids %v, want 5 distinct pids", pids)
	}
	// Above the fork, the attempt is the real stub's: its exec dir exists.
	if _, err := os.Stat(filepath.Join(attemptDirOf(s, client.AttemptRef{JobID: 1, Instance: 0, Attempt: 1}), "stdout")); err != nil {
		t.Errorf("exec dir of 1.0.1: %v", err)
	}
}

func TestSimulatedExecFailure(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := simStub(t, srv, Simulation{RunTime: time.Hour})
	req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/no/such/binary"}
	mustStart(t, stubClient(t, s), req)
	evs := srv.waitTerm(t, keyOf(req))
	if got := evs[0]; got.Kind != client.ChildTerm || got.ExitCode != supervisor.ExecFailedCode || !strings.Contains(got.Error, "no such file") {
		t.Errorf("first event = %+v, want a TERM with exit %d and \"no such file\"", got, supervisor.ExecFailedCode)
	}
}

func TestSimulatedFacts(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := simStub(t, srv, Simulation{Slots: 16, MemoryMB: 64000})
	f, err := stubClient(t, s).Facts(context.Background())
	if err != nil {
		t.Fatalf("Facts: %v", err)
	}
	if got, want := f.Attrs["nprocs"], 16.0; got != want {
		t.Errorf("nprocs = %v, want %v", got, want)
	}
	if got, want := f.Attrs["mem"], 64000.0; got != want {
		t.Errorf("mem = %v, want %v", got, want)
	}
}

// TestSimulatedRestart restarts a simulated stub on its DataDir: the
// attempt that ended meanwhile is reported, the one still running is lost.
func TestSimulatedRestart(t *testing.T) {
	srv := newFakeServer(t, 0)
	dataDir := t.TempDir()
	cfg := Config{Name: "m1", DataDir: dataDir, ExecDir: t.TempDir(), Servers: []string{srv.addr()},
		Simulate: &Simulation{RunTime: time.Hour}}
	first, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	running := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/true"}
	ending := client.StartRequest{JobID: 2, Attempt: 1, Binary: "/bin/true"}
	for _, req := range []client.StartRequest{running, ending} {
		mustRun(t, stubClient(t, first), req)
	}
	if err := first.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// The simulated supervisors outlive the stub, as real ones do.
	sim := first.runner.sup.(*supervisor.Simulator)
	dir := func(req client.StartRequest) string { return filepath.Join(dataDir, attemptsDir, keyOf(req).String()) }
	if err := sim.Signal(t.Context(), dir(ending), unix.SIGKILL, 0); err != nil {
		t.Fatalf("signal the simulated supervisor while no stub runs: %v", err)
	}
	testwait.For(t, waitTimeout, "result.json of "+keyOf(ending).String(), func() bool { _, err := readResult(dir(ending)); return err == nil })
	t.Cleanup(func() {
		_ = sim.Signal(context.Background(), dir(running), unix.SIGKILL, 0)
		// The simulated supervisor writes result.json as the attempt
		// ends; wait for it, or TempDir's removal races the write
		// ("directory not empty", seen once in CI).
		testwait.For(t, waitTimeout, "result.json of "+keyOf(running).String()+" after the cleanup's kill", func() bool {
			_, err := readResult(dir(running))
			return err == nil
		})
	})

	newTestStub(t, cfg)
	if got := lastTerm(t, srv, keyOf(ending)); got.Signal != "KILL" {
		t.Errorf("TERM of the attempt that ended meanwhile = %+v, want signal KILL", got)
	}
	if got := lastTerm(t, srv, keyOf(running)); got.ExitCode != lostExitCode || got.Error != lostError {
		t.Errorf("TERM of the running attempt = %+v, want lost", got)
	}
}
