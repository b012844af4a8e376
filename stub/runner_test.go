package stub

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

func TestStart(t *testing.T) {
	srv := newFakeServer(t, 0)
	execDir := t.TempDir()
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecDir: execDir})
	c := stubClient(t, s)

	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		req       client.StartRequest
		root      bool // needs a root stub
		wantCode  int
		wantError string // substring of the TERM's Error; "" = none and a REGISTER first
		check     func(t *testing.T, dir string)
	}{
		{
			name: "writes a file in its exec dir",
			req:  shJob(1, 2, `echo "$NETMGR_INSTANCE $NETMGR_JOB_NAME $NETMGR_MACHINE $NETMGR_ATTEMPT" > out`),
			check: func(t *testing.T, dir string) {
				got, err := os.ReadFile(filepath.Join(dir, "out"))
				if err != nil {
					t.Fatalf("job's file: %v", err)
				}
				if want := "2 job1 m1 1\n"; string(got) != want {
					t.Errorf("job's file = %q, want %q", got, want)
				}
			},
		},
		{name: "exit code", req: shJob(2, 0, "exit 3"), wantCode: 3},
		{
			name: "gang instance knows its gang",
			req: func() client.StartRequest {
				r := shJob(8, 1, `echo "$NETMGR_GANG_HOSTS $NETMGR_GANG_RANK $NETMGR_GANG_SIZE" > out; cat "$NETMGR_GANG_HOSTFILE" >> out`)
				r.GangHosts = []string{"m3", "m1", "m2"}
				return r
			}(),
			check: func(t *testing.T, dir string) {
				got, err := os.ReadFile(filepath.Join(dir, "out"))
				if err != nil {
					t.Fatalf("job's file: %v", err)
				}
				if want := "m3,m1,m2 1 3\nm3\nm1\nm2\n"; string(got) != want {
					t.Errorf("job's file = %q, want %q", got, want)
				}
			},
		},
		{
			name: "environment and PATH",
			req: func() client.StartRequest {
				r := shJob(3, 0, `test "$A" = b && command -v ls >/dev/null && echo ok`)
				r.Env = []string{"A=b"}
				return r
			}(),
			check: func(t *testing.T, dir string) {
				got, _ := os.ReadFile(filepath.Join(dir, "stdout"))
				if string(got) != "ok\n" {
					t.Errorf("stdout = %q, want %q", got, "ok\n")
				}
			},
		},
		{name: "binary found in PATH", req: client.StartRequest{JobID: 4, Attempt: 1, Binary: "true"}},
		{
			name:      "missing binary",
			req:       client.StartRequest{JobID: 5, Attempt: 1, Binary: "/no/such/binary"},
			wantCode:  supervisor.ExecFailedCode,
			wantError: "no such file",
		},
		{
			name:      "not executable",
			req:       client.StartRequest{JobID: 6, Attempt: 1, Binary: notExec},
			wantCode:  supervisor.ExecFailedCode,
			wantError: "permission denied",
		},
		{
			name:      "unknown owner",
			req:       client.StartRequest{JobID: 7, Attempt: 1, Binary: "/bin/true", Owner: "no-such-user-netmgr"},
			root:      true,
			wantCode:  supervisor.ExecFailedCode,
			wantError: "no-such-user-netmgr",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			k := keyOf(tt.req)
			mustStart(t, c, tt.req)
			evs := srv.waitTerm(t, k)
			term := evs[len(evs)-1]
			if tt.wantError == "" {
				if len(evs) != 2 || evs[0].Kind != client.ChildRegister {
					t.Fatalf("events = %+v, want REGISTER then TERM", evs)
				}
				if evs[0].PID <= 0 || evs[0].Machine != "m1" || evs[0].At.IsZero() {
					t.Errorf("REGISTER = %+v, want pid, machine m1 and time", evs[0])
				}
				if term.Error != "" {
					t.Errorf("TERM error = %q, want none", term.Error)
				}
			} else {
				if len(evs) != 1 {
					t.Fatalf("events = %+v, want only a TERM", evs)
				}
				if !strings.Contains(term.Error, tt.wantError) {
					t.Errorf("TERM error = %q, want it to contain %q", term.Error, tt.wantError)
				}
			}
			if term.ExitCode != tt.wantCode || term.Signal != "" {
				t.Errorf("TERM exit code %d signal %q, want %d and no signal", term.ExitCode, term.Signal, tt.wantCode)
			}
			if tt.check != nil {
				tt.check(t, attemptDirOf(s, k))
			}
		})
	}
}

func TestStartDuplicate(t *testing.T) {
	srv := newFakeServer(t, 0)
	execDir := t.TempDir()
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecDir: execDir})
	c := stubClient(t, s)
	req := shJob(1, 0, "echo run >> runs")

	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := startAlone(context.Background(), c, req); err != nil {
				t.Errorf("Start: %v", err)
			}
		})
	}
	wg.Wait()
	srv.waitTerm(t, keyOf(req))
	mustStart(t, c, req) // after the end: still a repeat

	got, err := os.ReadFile(filepath.Join(attemptDirOf(s, keyOf(req)), "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "run\n" {
		t.Errorf("runs file = %q, want one run", got)
	}
	if evs := srv.events(keyOf(req)); len(evs) != 2 {
		t.Errorf("events = %+v, want one REGISTER and one TERM", evs)
	}
}

func TestSignal(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	ctx := context.Background()

	t.Run("TERM", func(t *testing.T) {
		req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/sleep", Args: []string{"100"}}
		mustStart(t, c, req)
		err := c.Signal(ctx, client.SignalRequest{JobID: 1, Attempt: 1, Signal: "TERM"})
		if err != nil {
			t.Fatalf("Signal: %v", err)
		}
		evs := srv.waitTerm(t, keyOf(req))
		if got := evs[len(evs)-1].Signal; got != "TERM" {
			t.Errorf("TERM signal = %q, want %q", got, "TERM")
		}
	})

	t.Run("KILL after grace", func(t *testing.T) {
		req := shJob(2, 0, `trap "" TERM; touch ready; while :; do sleep 0.05; done`)
		mustStart(t, c, req)
		ready := filepath.Join(attemptDirOf(s, keyOf(req)), "ready")
		testwait.For(t, waitTimeout, "the job to trap TERM", func() bool { _, err := os.Stat(ready); return err == nil })
		const grace = 300 * time.Millisecond
		start := time.Now()
		err := c.Signal(ctx, client.SignalRequest{JobID: 2, Attempt: 1, Signal: "SIGTERM", GraceMS: grace.Milliseconds()})
		if err != nil {
			t.Fatalf("Signal: %v", err)
		}
		evs := srv.waitTerm(t, keyOf(req))
		if got := evs[len(evs)-1].Signal; got != "KILL" {
			t.Errorf("TERM signal = %q, want %q", got, "KILL")
		}
		if el := time.Since(start); el < grace {
			t.Errorf("killed after %v, want at least the grace %v", el, grace)
		}
	})

	t.Run("finished attempt", func(t *testing.T) {
		req := client.StartRequest{JobID: 3, Attempt: 1, Binary: "/bin/true"}
		mustStart(t, c, req)
		srv.waitTerm(t, keyOf(req))
		if err := c.Signal(ctx, client.SignalRequest{JobID: 3, Attempt: 1}); err != nil {
			t.Errorf("Signal of a finished attempt: %v, want nil", err)
		}
	})

	t.Run("unknown attempt", func(t *testing.T) {
		err := c.Signal(ctx, client.SignalRequest{JobID: 99, Attempt: 1})
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("Signal = %v, want ErrNotFound", err)
		}
	})

	t.Run("unknown signal", func(t *testing.T) {
		err := c.Signal(ctx, client.SignalRequest{JobID: 1, Attempt: 1, Signal: "NOPE"})
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 400 {
			t.Errorf("Signal = %v, want a 400 APIError", err)
		}
	})
}

func TestNoOrphanSurvives(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	req := shJob(1, 0, "sleep 1000 & echo $! > bg.pid; exit 0")
	mustStart(t, c, req)
	evs := srv.waitTerm(t, keyOf(req))
	if term := evs[len(evs)-1]; term.ExitCode != 0 {
		t.Fatalf("TERM = %+v, want exit 0", term)
	}
	pgid := evs[0].PID
	b, err := os.ReadFile(filepath.Join(attemptDirOf(s, keyOf(req)), "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	bg, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if bg <= 0 {
		t.Fatalf("background pid %q", b)
	}
	testwait.For(t, waitTimeout, "the job's process group to be empty", func() bool {
		return errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
	})
	if err := unix.Kill(bg, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("kill(%d, 0) = %v, want ESRCH", bg, err)
	}
}

func TestOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	srv := newFakeServer(t, 0)
	execDir := t.TempDir()
	// The owner must be able to reach its attempt directory.
	for _, d := range []string{execDir, filepath.Dir(execDir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecDir: execDir})
	c := stubClient(t, s)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	req := shJob(1, 0, "id -u > uid")
	req.Owner = "nobody"
	mustStart(t, c, req)
	evs := srv.waitTerm(t, keyOf(req))
	if term := evs[len(evs)-1]; term.ExitCode != 0 || term.Error != "" {
		t.Fatalf("TERM = %+v, want exit 0", term)
	}
	got, err := os.ReadFile(filepath.Join(attemptDirOf(s, keyOf(req)), "uid"))
	if err != nil {
		t.Fatal(err)
	}
	if want := nobody.Uid + "\n"; string(got) != want {
		t.Errorf("job ran as uid %q, want %q", got, want)
	}
}
