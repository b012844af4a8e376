package stub

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestLogFollowsAnAttempt follows a running attempt's stdout: a line
// arrives while the job waits, the stream ends cleanly once the attempt
// ended and its last line is sent, and a read from an offset starts
// there. A follower that goes away leaves no stream behind.
func TestLogFollowsAnAttempt(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	dir := t.TempDir()
	req := shJob(1, 0, `echo first; while [ ! -e `+dir+`/go ]; do sleep 0.02; done; echo last; echo oops >&2`)
	mustRun(t, c, req)
	k := keyOf(req)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, err := c.Log(ctx, client.LogRequest{AttemptRef: k, Stream: client.LogStdout, Follow: true})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	defer body.Close()
	rd := bufio.NewReader(body)
	if line, err := rd.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(rd); err != nil || string(rest) != "last\n" {
		t.Errorf("rest of the followed stream = %q, %v; want %q and a clean end", rest, err, "last\n")
	}

	for _, tc := range []struct {
		req  client.LogRequest
		want string
	}{
		{client.LogRequest{AttemptRef: k, Stream: client.LogStdout, Offset: 6}, "last\n"},
		{client.LogRequest{AttemptRef: k, Stream: client.LogStderr, Follow: true}, "oops\n"},
	} {
		b, err := c.Log(context.Background(), tc.req)
		if err != nil {
			t.Fatalf("log %+v: %v", tc.req, err)
		}
		got, err := io.ReadAll(b)
		b.Close()
		if err != nil || string(got) != tc.want {
			t.Errorf("log %+v = %q, %v; want %q", tc.req, got, err, tc.want)
		}
	}

	_, err = c.Log(context.Background(), client.LogRequest{AttemptRef: client.AttemptRef{JobID: 9, Attempt: 1}, Stream: client.LogStdout})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("log of an unknown attempt: %v, want 404", err)
	}

	// A follower of a running attempt goes away: its stream ends.
	waiter := shJob(2, 0, `echo waiting; sleep 600`)
	mustRun(t, c, waiter)
	fctx, fcancel := context.WithCancel(context.Background())
	fb, err := c.Log(fctx, client.LogRequest{AttemptRef: keyOf(waiter), Stream: client.LogStdout, Follow: true})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	if line, err := bufio.NewReader(fb).ReadString('\n'); err != nil || line != "waiting\n" {
		t.Fatalf("follow: %q, %v", line, err)
	}
	if n := s.metrics.logStreams.Load(); n != 1 {
		t.Errorf("log streams while one is followed = %d, want 1", n)
	}
	fcancel()
	fb.Close()
	testwait.For(t, waitTimeout, "the stream of a follower that went away ended", func() bool { return s.metrics.logStreams.Load() == 0 })
	if err := c.Signal(context.Background(), client.SignalRequest{JobID: 2, Instance: 0, Attempt: 1, Signal: "KILL"}); err != nil {
		t.Fatalf("kill the waiter: %v", err)
	}
}

// A followed stream of a stub that shuts down breaks rather than end as
// if complete, and does not hold the shutdown up.
func TestLogStreamBreaksAtShutdown(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	req := shJob(1, 0, `echo waiting; exec sleep 600`)
	pid := mustRun(t, c, req)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // its supervisor outlives the stub
	body, err := c.Log(context.Background(), client.LogRequest{AttemptRef: keyOf(req), Stream: client.LogStdout, Follow: true})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	defer body.Close()
	rd := bufio.NewReader(body)
	if line, err := rd.ReadString('\n'); err != nil || line != "waiting\n" {
		t.Fatalf("follow: %q, %v", line, err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if rest, err := io.ReadAll(rd); err == nil {
		t.Errorf("the stream of a stub that shut down ended cleanly after %q; want it broken", rest)
	}
}
