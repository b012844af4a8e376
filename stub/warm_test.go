package stub

import (
	"testing"
	"time"
)

// After a start the stub keeps a warm supervisor ready; the next start
// uses it, and a stub that stops leaves no warm supervisor behind.
func TestWarmSupervisor(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)

	readyOne := func() *warmSupervisor {
		var w *warmSupervisor
		waitFor(t, "a warm supervisor", func() bool {
			s.runner.warm.mu.Lock()
			defer s.runner.warm.mu.Unlock()
			w = s.runner.warm.ready
			return w != nil
		})
		return w
	}

	first := shJob(1, 0, "exit 0")
	mustStart(t, c, first)
	srv.waitTerm(t, keyOf(first))
	w := readyOne()

	second := shJob(2, 0, `echo "$NETMGR_JOB_ID" > out; exit 4`)
	mustStart(t, c, second)
	evs := srv.waitTerm(t, keyOf(second))
	if term := evs[len(evs)-1]; term.ExitCode != 4 || len(evs) != 2 {
		t.Fatalf("events = %+v, want REGISTER and TERM with exit code 4", evs)
	}
	select {
	case <-w.reaped: // the warm supervisor ran the second job and ended with it
	case <-time.After(waitTimeout):
		t.Fatal("the warm supervisor did not run the second job")
	}

	idle := readyOne()
	if err := s.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-idle.reaped:
	case <-time.After(waitTimeout):
		t.Fatalf("warm supervisor %d outlived its stub", idle.cmd.Process.Pid)
	}
}
