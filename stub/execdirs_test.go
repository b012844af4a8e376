package stub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// waitSweeps waits until s has swept n more times than now.
func waitSweeps(t *testing.T, s *Stub, n int64) {
	t.Helper()
	target := s.execs.sweeps.Load() + n
	testwait.For(t, waitTimeout, "exec dir sweeps", func() bool { return s.execs.sweeps.Load() >= target })
}

func gone(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist)
}

// TestExecDirRemovedAfterRetention runs a job and checks that its exec
// dir, with its output, is kept while its end is not committed and for
// the retention after, and then removed.
func TestExecDirRemovedAfterRetention(t *testing.T) {
	srv := newFakeServer(t, 503) // no leader: nothing is committed
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecRetention: 50 * time.Millisecond})
	c := stubClient(t, s)
	req := shJob(1, 0, "echo kept")
	mustRun(t, c, req)
	k := keyOf(req)
	dir := attemptDirOf(s, k)
	if want := filepath.Join(s.cfg.ExecDir, insecureClusterID, "1.0.1"); dir != want {
		t.Errorf("exec dir = %s, want %s", dir, want)
	}
	testwait.For(t, waitTimeout, "the TERM sent (and refused)", func() bool {
		evs := srv.receivedOf(k)
		return len(evs) > 0 && evs[len(evs)-1].Kind == client.ChildTerm
	})
	testwait.For(t, waitTimeout, "the retention past the end", func() bool {
		s.runner.mu.Lock()
		defer s.runner.mu.Unlock()
		a := s.runner.attempts[k]
		return a.rec.Ended && time.Since(a.rec.EndedAt) > 2*s.execs.retention
	})
	waitSweeps(t, s, 2)
	if b, err := os.ReadFile(filepath.Join(dir, "stdout")); err != nil || string(b) != "kept\n" {
		t.Fatalf("an attempt whose end is not committed lost its stdout: %q, %v", b, err)
	}
	if got := s.execs.kept.Load(); got != 1 {
		t.Errorf("kept exec dirs = %d, want 1", got)
	}
	if s.execs.used.Load() <= 0 {
		t.Errorf("exec dir used bytes = %d, want some", s.execs.used.Load())
	}

	srv.mu.Lock()
	srv.status = 0
	srv.mu.Unlock()
	srv.waitTerm(t, k)
	testwait.For(t, waitTimeout, "the exec dir removed once its end is committed", func() bool { return gone(dir) })
	testwait.For(t, waitTimeout, "no exec dir kept", func() bool { return s.execs.kept.Load() == 0 })
}

// TestExecDirNeverReused checks that a Start whose exec dir exists (an
// earlier cluster's with the same job ids) fails as the machine's fault
// and leaves that directory as it was, now and after the retention.
func TestExecDirNeverReused(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecRetention: 10 * time.Millisecond})
	c := stubClient(t, s)
	req := shJob(1, 0, "echo mine")
	k := keyOf(req)
	theirs := attemptDirOf(s, k)
	if err := os.MkdirAll(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "stdout"), []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if reg := mustStart(t, c, req); reg != nil {
		t.Fatalf("Start into an existing exec dir answered REGISTER %+v, want none", reg)
	}
	term := lastEvent(srv.waitTerm(t, k))
	if !term.MachineFault || !strings.Contains(term.Error, "exists already") {
		t.Errorf("TERM = %+v, want a machine fault saying the exec dir exists", term)
	}
	testwait.For(t, waitTimeout, "the retention past the failed start", func() bool {
		s.runner.mu.Lock()
		defer s.runner.mu.Unlock()
		return time.Since(s.runner.attempts[k].rec.EndedAt) > 2*s.execs.retention
	})
	waitSweeps(t, s, 2)
	if b, err := os.ReadFile(filepath.Join(theirs, "stdout")); err != nil || string(b) != "theirs\n" {
		t.Errorf("the existing exec dir's stdout = %q, %v; want it untouched", b, err)
	}
	if p := s.health.problem(); p != "" {
		t.Errorf("the machine drains itself (%q) for a directory that was not its", p)
	}

	// A Start that fails before making its directory (an unknown owner,
	// which only a root stub looks up) claims none that exists.
	if os.Geteuid() == 0 {
		other := shJob(3, 0, "echo mine")
		other.Owner = "no-such-user-netmgr"
		odir := attemptDirOf(s, keyOf(other))
		if err := os.MkdirAll(odir, 0o700); err != nil {
			t.Fatal(err)
		}
		mustStart(t, c, other)
		srv.waitTerm(t, keyOf(other))
		testwait.For(t, waitTimeout, "the retention past the unknown owner's start", func() bool {
			s.runner.mu.Lock()
			defer s.runner.mu.Unlock()
			return time.Since(s.runner.attempts[keyOf(other)].rec.EndedAt) > 2*s.execs.retention
		})
		waitSweeps(t, s, 2)
		if gone(odir) {
			t.Errorf("a failed Start's sweeper removed %s, which it did not make", odir)
		}
	} else {
		t.Log("not root: the unknown-owner case is not tried (only a root stub looks owners up)")
	}

	// The next attempt gets a directory of its own.
	req.Attempt = 2
	mustRun(t, c, req)
	srv.waitTerm(t, keyOf(req))
	testwait.For(t, waitTimeout, "attempt 2's exec dir removed", func() bool { return gone(attemptDirOf(s, keyOf(req))) })
}

// TestExecDirCleanupAcrossRestart checks that a stub goes on removing the
// exec dirs an earlier stub on the same DataDir kept, and never one of
// another cluster's.
func TestExecDirCleanupAcrossRestart(t *testing.T) {
	srv := newFakeServer(t, 0)
	r := newRestartable(t, srv, NoCgroups)
	r.cfg.ExecRetention = time.Hour
	r.restart()
	c := stubClient(t, r.s)
	req := shJob(1, 0, "echo once")
	mustRun(t, c, req)
	k := keyOf(req)
	srv.waitTerm(t, k)
	dir := r.execDir(k)
	testwait.For(t, waitTimeout, "the TERM answered", func() bool { return !r.s.out.HasUnsent(k) })
	if gone(dir) {
		t.Fatalf("exec dir removed within an hour's retention")
	}
	foreign := filepath.Join(r.cfg.ExecDir, "0123456789abcdef", k.String())
	if err := os.MkdirAll(foreign, 0o700); err != nil {
		t.Fatal(err)
	}

	r.stop()
	r.cfg.ExecRetention = 20 * time.Millisecond
	r.start()
	testwait.For(t, waitTimeout, "the earlier stub's exec dir removed", func() bool { return gone(dir) })
	if gone(foreign) {
		t.Errorf("another cluster's exec dir %s was removed", foreign)
	}

	// The removal is recorded: a third stub has nothing to do.
	r.restart()
	testwait.For(t, waitTimeout, "the new stub's first sweep", func() bool { return r.s.execs.sweeps.Load() >= 1 })
	if got := r.s.execs.kept.Load(); got != 0 {
		t.Errorf("kept exec dirs after restart = %d, want 0", got)
	}
}

// lastEvent is the last of evs.
func lastEvent(evs []client.ChildEvent) client.ChildEvent { return evs[len(evs)-1] }
