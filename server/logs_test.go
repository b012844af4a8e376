package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
)

// readLog reads all of a job instance's stream through cl.
func readLog(t *testing.T, cl *client.Client, ref string, q client.LogsQuery) (string, error) {
	t.Helper()
	body, err := cl.Logs(ctx(t), ref, q)
	if err != nil {
		return "", err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return string(b), err
}

// wantLogsError fails t unless err is an *APIError with status whose
// message holds every one of parts.
func wantLogsError(t *testing.T, what string, err error, status int, parts ...string) {
	t.Helper()
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != status {
		t.Errorf("%s: got %v, want an API error with status %d", what, err, status)
		return
	}
	for _, p := range parts {
		if !strings.Contains(apiErr.Message, p) {
			t.Errorf("%s: message %q does not say %q", what, apiErr.Message, p)
		}
	}
}

// TestLogsOfAFinishedJob reads the stdout and stderr of each instance of
// a finished job through real servers and a stub that forked it, from a
// follower as well as the leader; another user is refused, and an
// unknown job or instance is named.
func TestLogsOfAFinishedJob(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha")
	leader := c.WaitLeader()
	follower := c.ClientAs(servertest.CurrentUser(t), (leader+1)%3)
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec(`echo out$NETMGR_INSTANCE; echo err$NETMGR_INSTANCE >&2`, 2)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ref := strconv.FormatUint(resp.ID, 10)
	if _, err := cl.WaitJob(ctx(t), ref, client.WaitDone); err != nil {
		t.Fatalf("wait: %v", err)
	}
	for _, tc := range []struct {
		cl   *client.Client
		q    client.LogsQuery
		want string
	}{
		{cl, client.LogsQuery{}, "out0\n"},
		{cl, client.LogsQuery{Instance: 1}, "out1\n"},
		{follower, client.LogsQuery{Instance: 1, Stream: client.LogStderr}, "err1\n"},
		{follower, client.LogsQuery{Stream: client.LogStderr, Follow: true}, "err0\n"},
	} {
		got, err := readLog(t, tc.cl, ref, tc.q)
		if err != nil || got != tc.want {
			t.Errorf("logs %+v = %q, %v; want %q", tc.q, got, err, tc.want)
		}
	}
	_, err = readLog(t, c.ClientAs("mallory"), ref, client.LogsQuery{})
	wantLogsError(t, "logs as another user", err, http.StatusForbidden, "belongs to "+resp.Owner, "only its owner or an admin_id may read the output of it")
	_, err = readLog(t, cl, ref, client.LogsQuery{Instance: 2})
	wantLogsError(t, "logs of instance 2 of 2", err, http.StatusNotFound, "has no instance 2 (it has 2")
	_, err = readLog(t, cl, "999", client.LogsQuery{})
	wantLogsError(t, "logs of an unknown job", err, http.StatusNotFound, "999")
	_, err = readLog(t, cl, ref, client.LogsQuery{Stream: "stdin"})
	wantLogsError(t, "logs of stdin", err, http.StatusBadRequest, "want stdout or stderr")
}

// TestLogsFollowSeesLinesAsWritten follows a running job's stdout from a
// follower: each line arrives while the job waits, before it writes the
// next, and the stream ends cleanly when the job ends.
func TestLogsFollowSeesLinesAsWritten(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha")
	leader := c.WaitLeader()
	follower := c.ClientAs(servertest.CurrentUser(t), (leader+2)%3)
	dir := t.TempDir()
	script := `for i in 1 2 3; do echo line$i; while [ ! -e ` + dir + `/go$i ]; do sleep 0.02; done; done`
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec(script, 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	// Asked at once: the instance may not have reached its stub yet.
	body, err := follower.Logs(ctx(t), strconv.FormatUint(resp.ID, 10), client.LogsQuery{Follow: true})
	if err != nil {
		t.Fatalf("logs -f: %v", err)
	}
	defer body.Close()
	rd := bufio.NewReader(body)
	for i := 1; i <= 3; i++ {
		line, err := rd.ReadString('\n')
		if want := "line" + strconv.Itoa(i) + "\n"; err != nil || line != want {
			t.Fatalf("line %d = %q, %v; want %q (the job waits for the test before it writes more)", i, line, err, want)
		}
		if err := os.WriteFile(filepath.Join(dir, "go"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rest, err := io.ReadAll(rd)
	if err != nil || len(rest) != 0 {
		t.Errorf("after the job ended: %q, %v; want a clean end", rest, err)
	}

	// Followed while it is held (it has not started), a job is waited
	// for: its output comes once it runs.
	gate := filepath.Join(dir, "gate")
	first, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec(`while [ ! -e `+gate+` ]; do sleep 0.02; done`, 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	held := shSpec(`echo after`, 1)
	held.After = []string{strconv.FormatUint(first.ID, 10)}
	second, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: held})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		out, err := readLog(t, follower, strconv.FormatUint(second.ID, 10), client.LogsQuery{Follow: true})
		if err != nil {
			out = "error: " + err.Error()
		}
		got <- out
	}()
	if j, err := cl.Job(ctx(t), strconv.FormatUint(second.ID, 10)); err != nil || j.State != client.JobHeld {
		t.Errorf("the second job is %+v, %v; want it held while the test follows it", j.State, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := <-got; out != "after\n" {
		t.Errorf("logs -f of a job followed while held = %q; want %q", out, "after\n")
	}

	// A follower that goes away ends the server's stream and the stub's.
	resp, err = cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec(`echo waiting; exec sleep 600`, 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	fctx, fcancel := context.WithCancel(ctx(t))
	fb, err := follower.Logs(fctx, strconv.FormatUint(resp.ID, 10), client.LogsQuery{Follow: true})
	if err != nil {
		t.Fatalf("logs -f: %v", err)
	}
	if line, err := bufio.NewReader(fb).ReadString('\n'); err != nil || line != "waiting\n" {
		t.Fatalf("logs -f of the sleeper: %q, %v", line, err)
	}
	if n := stubLogStreams(t, c); n != 1 {
		t.Errorf("the stub's log streams while one is followed = %d, want 1", n)
	}
	fcancel()
	fb.Close()
	testwait.For(t, 10*time.Second, "the stub's stream ended after the follower went", func() bool { return stubLogStreams(t, c) == 0 })
}

// stubLogStreams reads netmgr_stub_log_streams from the first stub's
// /metrics.
func stubLogStreams(t *testing.T, c *servertest.Cluster) int {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(c.Material(pki.Identity{Role: pki.RoleServer, Name: "tester"}), pki.RoleStub)}
	resp, err := hc.Get("https://" + c.Stubs[0].HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatalf("stub metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stub metrics: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "netmgr_stub_log_streams "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("netmgr_stub_log_streams %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("no netmgr_stub_log_streams in the stub's metrics")
	return 0
}

// TestLogsAfterExecRetention reads a job's output before and after its
// stub removed the exec dir: afterwards the answer is 410 and says why.
// The stub's log endpoint serves servers only.
func TestLogsAfterExecRetention(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	st := c.AddStubConfig("alpha", "", func(cfg *stub.Config) { cfg.ExecRetention = 2 * time.Second })
	cl := c.Client()
	testwait.For(t, 15*time.Second, "stub up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec(`echo kept`, 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ref := strconv.FormatUint(resp.ID, 10)
	if _, err := cl.WaitJob(ctx(t), ref, client.WaitDone); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if got, err := readLog(t, cl, ref, client.LogsQuery{}); err != nil || got != "kept\n" {
		t.Errorf("logs within the retention = %q, %v; want %q", got, err, "kept\n")
	}

	// A user's certificate, or a stub's, does not read a stub's logs.
	for _, id := range []pki.Identity{{Role: pki.RoleClient, Name: "mallory"}, {Role: pki.RoleStub, Name: "beta"}} {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(c.Material(id), pki.RoleStub)}
		sc, err := client.NewStub(st.HTTPAddr(), client.WithHTTPClient(hc), client.WithHTTPS())
		if err != nil {
			t.Fatal(err)
		}
		_, err = sc.Log(ctx(t), client.LogRequest{AttemptRef: client.AttemptRef{JobID: resp.ID, Attempt: 1}, Stream: client.LogStdout})
		wantLogsError(t, "stub logs with a "+string(id.Role)+" certificate", err, http.StatusForbidden, "only [server] certificates may")
	}

	var last error
	testwait.For(t, 30*time.Second, "the output gone after the retention", func() bool {
		_, last = readLog(t, cl, ref, client.LogsQuery{})
		return last != nil
	})
	wantLogsError(t, "logs after the retention", last, http.StatusGone, "removed after the exec retention")
}
