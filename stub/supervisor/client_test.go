package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netmgr/netmgr/internal/testwait"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 15 * time.Second

// newTestClient returns a client of a supervisor host on a fresh
// attempts directory; at cleanup it closes the client and waits for the
// hosts it started to exit.
func newTestClient(t *testing.T) *Client {
	t.Helper()
	c := NewClient(t.TempDir(), nil, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		c.Close()
		timeout := time.After(10 * time.Second)
		for _, reaped := range c.HostsReaped() {
			select {
			case <-reaped:
			case <-timeout:
				t.Logf("a supervisor host still runs jobs the test left running")
				return
			}
		}
	})
	return c
}

// testAttempt is an attempt a test started through a Client.
type testAttempt struct {
	dir, execDir string
	Started
}

// startScript starts script under /bin/sh as attempt name, failing the
// test unless it runs; its process group is killed at cleanup.
func startScript(t *testing.T, c *Client, name, script string) testAttempt {
	t.Helper()
	a := testAttempt{dir: filepath.Join(c.root, name), execDir: t.TempDir()}
	var err error
	a.Started, err = c.Start(a.dir, Spec{
		Key: name, Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: a.execDir,
		Env: []string{"PATH=" + os.Getenv("PATH"), "NETMGR_JOB_ID=" + name, "NETMGR_INSTANCE=0", "NETMGR_ATTEMPT=1"},
	})
	if err != nil || a.Error != "" || a.PID <= 0 {
		t.Fatalf("Start %s: %+v, %v; want a job running", name, a.Started, err)
	}
	t.Cleanup(func() { _ = unix.Kill(-a.PID, unix.SIGKILL) })
	return a
}

// gated runs until the file "go" appears in its exec dir, then exits 3.
const gated = `while [ ! -e go ]; do sleep 0.05; done; exit 3`

// release lets a gated attempt end.
func (a testAttempt) release(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(a.execDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pushed waits for the result the host pushes on the lifeline.
func (a testAttempt) pushed(t *testing.T) Result {
	t.Helper()
	select {
	case res, ok := <-a.Ended:
		if !ok {
			t.Fatal("the lifeline brought no result")
		}
		return res
	case <-time.After(waitTimeout):
		t.Fatal("no result pushed")
	}
	return Result{}
}

// supervisorOf is the supervisor process recorded for the attempt.
func supervisorOf(t *testing.T, a testAttempt) procIdentity {
	t.Helper()
	var st attemptState
	if err := readJSONFile(filepath.Join(a.dir, stateFile), &st); err != nil {
		t.Fatal(err)
	}
	return st.Supervisor
}

// A start sent to a host on its way out is refused, and the client starts
// another host for it.
func TestHostReplaced(t *testing.T) {
	c := newTestClient(t)
	first := startScript(t, c, "1.0.1", "exit 0")
	if res := first.pushed(t); res.ExitCode != 0 {
		t.Fatalf("result = %+v, want exit 0", res)
	}
	old := supervisorOf(t, first)

	// Drop the lifeline behind the client's back: the idle host exits.
	c.mu.Lock()
	ll := c.lifeline
	c.mu.Unlock()
	c.drop(ll)
	<-c.HostsReaped()[0]

	next := startScript(t, c, "2.0.1", "exit 0")
	if res := next.pushed(t); res.ExitCode != 0 {
		t.Fatalf("result = %+v, want exit 0", res)
	}
	if got := supervisorOf(t, next); got == old {
		t.Fatalf("the attempt ran under the host that exited, %+v", old)
	}
}

// A second host started on a directory whose host still listens leaves
// it be: the running host keeps its socket, so its jobs stay in reach.
func TestSecondHostLeavesTheFirst(t *testing.T) {
	c := newTestClient(t)
	a := startScript(t, c, "1.0.1", "exec sleep 1000")
	if err := c.spawn(); err == nil {
		t.Fatal("a second host started beside the running one")
	}
	if err := c.Signal(t.Context(), a.dir, unix.SIGTERM, 0); err != nil {
		t.Fatalf("Signal after the second host's try: %v", err)
	}
	if res := a.pushed(t); res.Signal != "TERM" {
		t.Errorf("result = %+v, want signal TERM", res)
	}
}

// The host pushes each result on the lifeline. Should the lifeline break
// while a job runs, its result can still be asked for on the host socket,
// and the next start holds a new lifeline.
func TestHostPushFallsBack(t *testing.T) {
	c := newTestClient(t)
	held := func() *lifeline {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.lifeline
	}

	first := startScript(t, c, "1.0.1", gated)
	if first.Ended == nil {
		t.Fatal("the attempt gets no push")
	}
	first.release(t)
	if res := first.pushed(t); res.ExitCode != 3 {
		t.Errorf("result of 1.0.1 = %+v, want exit 3", res)
	}

	second := startScript(t, c, "2.0.1", gated)
	ll := held()
	_ = ll.conn.Close() // broken behind the client's back
	testwait.For(t, waitTimeout, "the lifeline to break", ll.isBroken)
	if _, ok := <-second.Ended; ok {
		t.Fatal("a broken lifeline brought a result")
	}
	second.release(t)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if res, err := c.Wait(ctx, second.dir); err != nil || res.ExitCode != 3 {
		t.Errorf("Wait 2.0.1 = %+v, %v; want exit 3", res, err)
	}

	third := startScript(t, c, "3.0.1", gated)
	if next := held(); next == ll || next.isBroken() {
		t.Fatal("the next start did not hold a new lifeline")
	}
	third.release(t)
	if res := third.pushed(t); res.ExitCode != 3 {
		t.Errorf("result of 3.0.1 = %+v, want exit 3", res)
	}
}

// Outcome tells a written result, a running supervisor and a gone one
// apart without asking the supervisor.
func TestOutcome(t *testing.T) {
	c := newTestClient(t)
	a := startScript(t, c, "1.0.1", gated)
	if _, err := c.Outcome(a.dir); !errors.Is(err, ErrRunning) {
		t.Fatalf("Outcome while the job runs = %v, want ErrRunning", err)
	}
	a.release(t)
	a.pushed(t)
	if res, err := c.Outcome(a.dir); err != nil || res.ExitCode != 3 {
		t.Errorf("Outcome once ended = %+v, %v; want exit 3", res, err)
	}
	if _, err := c.Outcome(t.TempDir()); err == nil || errors.Is(err, ErrRunning) {
		t.Errorf("Outcome of a directory without a supervisor = %v, want it gone", err)
	}
}
