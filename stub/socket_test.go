package stub

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/sockettest"
)

// socketStub starts a stub without gossip whose user socket is at a new
// path, passing requests on to servers.
func socketStub(t *testing.T, servers ...string) (*Stub, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run", "netmgr", "stub.sock")
	return startNoGossip(t, Config{Socket: path, Servers: servers}), path
}

// noGossip is a stub config on 127.0.0.1 without gossip.
func noGossip(t *testing.T, cfg Config) Config {
	cfg.Name, cfg.HTTPAddr = "m1", "127.0.0.1:0"
	cfg.DataDir, cfg.ExecDir = t.TempDir(), t.TempDir()
	return cfg
}

// startNoGossip starts a stub of noGossip(cfg) and stops it at cleanup.
func startNoGossip(t *testing.T, cfg Config) *Stub {
	t.Helper()
	s, err := New(noGossip(t, cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// echoServer is a server that answers every request with what it got:
// the method, the path and query, the headers and the body.
type echoed struct {
	Method, URI string
	Header      http.Header
	Body        string
}

func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", "yes")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(echoed{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header, Body: string(body)})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func me(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	return u.Username
}

// The socket's directory is made for everyone to enter, the socket for
// everyone to call, and both the socket and a second stub's attempt on it
// are handled: a live socket is kept, Shutdown removes it.
func TestUserSocketFile(t *testing.T) {
	s, path := socketStub(t)
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil || dir.Mode().Perm() != 0o755 {
		t.Fatalf("socket directory: %v, %v; want mode 0755", dir.Mode(), err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket file: %v, %v; want a socket of mode 0666", fi.Mode(), err)
	}

	_, err = New(noGossip(t, Config{Socket: path}))
	if !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("a second stub on a live socket: %v, want ErrSocketInUse", err)
	}
	if !isSocket(path) {
		t.Fatalf("the second stub took the first one's socket away")
	}

	if err := s.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket after Shutdown: %v, want it gone", err)
	}
}

// A socket file a dead stub left behind is replaced; a file that is no
// socket is not, and the stub says why it does not start.
func TestUserSocketStaleAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if !isSocket(stale) {
		t.Fatalf("no stale socket file to start from")
	}
	startNoGossip(t, Config{Socket: stale})
	c, err := net.Dial("unix", stale)
	if err != nil {
		t.Fatalf("the stub does not answer on the socket it replaced: %v", err)
	}
	c.Close()

	foreign := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(foreign, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = New(noGossip(t, Config{Socket: foreign}))
	if err == nil || !strings.Contains(err.Error(), "no socket") {
		t.Fatalf("a stub on a regular file: %v, want a refusal naming it no socket", err)
	}
	if data, err := os.ReadFile(foreign); err != nil || string(data) != "keep me" {
		t.Fatalf("the regular file after the refusal: %q, %v", data, err)
	}
}

// What the caller says about who it is never reaches the servers: the
// stub strips it and says who the kernel says called. Everything else of
// the request (method, path, query, body, headers) goes through, and the
// answer (status, headers, body) comes back.
func TestUserSocketPassesOnAsTheCaller(t *testing.T) {
	echo := echoServer(t)
	_, path := socketStub(t, echo.URL)
	body := `{"spec":"x"}`
	req, _ := http.NewRequest(http.MethodPost, "http://netmgr-stub/v1/jobs?wait=started&timeout=30s", strings.NewReader(body))
	req.Header.Set(client.UserHeader, "root")
	req.Header.Set(client.VouchedUserHeader, "root")
	req.Header.Set(client.ForwardedPrincipalHeader, `{"user":"root","machine":"m1"}`)
	req.Header.Set("Authorization", "Bearer stolen")
	req.Header.Set("Content-Type", "application/json")
	resp, err := sockettest.HTTP(path).Do(req)
	if err != nil {
		t.Fatalf("call the socket: %v", err)
	}
	defer resp.Body.Close()
	var got echoed
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("decode the echo: %v", err)
	}
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Echo") != "yes" {
		t.Errorf("answer: %s with X-Echo %q; want the server's 202 and its header", resp.Status, resp.Header.Get("X-Echo"))
	}
	if got.Method != http.MethodPost || got.URI != "/v1/jobs?wait=started&timeout=30s" || got.Body != body || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("the server got %s %s %q (%s); want the request as sent", got.Method, got.URI, got.Body, got.Header.Get("Content-Type"))
	}
	// Without TLS (this stub) the servers believe X-Netmgr-User; the stub
	// sets it to the caller and nothing else.
	if u := got.Header.Values(client.UserHeader); len(u) != 1 || u[0] != me(t) {
		t.Errorf("%s at the server: %v, want [%s]", client.UserHeader, u, me(t))
	}
	for _, h := range []string{client.VouchedUserHeader, client.ForwardedPrincipalHeader, "Authorization"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("%s reached the server: %q", h, v)
		}
	}
}

// A server that does not answer is skipped for the next.
func TestUserSocketTriesTheNextServer(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	echo := echoServer(t)
	_, path := socketStub(t, deadAddr, strings.TrimPrefix(echo.URL, "http://"))
	for range 3 {
		resp, err := sockettest.HTTP(path).Get("http://netmgr-stub/v1/jobs")
		if err != nil {
			t.Fatalf("call the socket: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("answer %s, want the live server's 202", resp.Status)
		}
	}
}

// With no server known, or none answering, the caller learns so at once,
// with a status its client retries.
func TestUserSocketNoServer(t *testing.T) {
	_, path := socketStub(t)
	resp, err := sockettest.HTTP(path).Get("http://netmgr-stub/v1/jobs")
	if err != nil {
		t.Fatalf("call the socket: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(data), "knows no server") {
		t.Fatalf("answer %s %s, want 503 saying no server is known", resp.Status, data)
	}
}

// A body over 1 MiB is refused before any server sees it.
func TestUserSocketBodyLimit(t *testing.T) {
	echo := echoServer(t)
	_, path := socketStub(t, echo.URL)
	resp, err := sockettest.HTTP(path).Post("http://netmgr-stub/v1/jobs", "application/json", bytes.NewReader(make([]byte, maxBody+1)))
	if err != nil {
		t.Fatalf("call the socket: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("answer %s, want 413", resp.Status)
	}
}

// A long answer reaches the caller as the server writes it, not when it
// ends: an event stream stays live through the socket.
func TestUserSocketStreams(t *testing.T) {
	next := make(chan struct{})
	mux := http.NewServeMux() // the stub's own lease renewals find nothing here
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for i := range 3 {
			fmt.Fprintf(w, "{\"index\":%d}\n", i)
			_ = rc.Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, path := socketStub(t, srv.URL)
	resp, err := sockettest.HTTP(path).Get("http://netmgr-stub/v1/events?follow=1")
	if err != nil {
		t.Fatalf("call the socket: %v", err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := lines.ReadString('\n')
		if err != nil || line != fmt.Sprintf("{\"index\":%d}\n", i) {
			t.Fatalf("line %d of the stream: %q, %v", i, line, err)
		}
		// The server writes the next line only once this one arrived.
		next <- struct{}{}
	}
}

// A caller whose uid has no name on the machine is refused with 403 and
// the reason; no server hears of it. The caller is this test binary run
// as such a uid, which needs root.
func TestUserSocketUidWithoutName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a process as a uid without a name needs root")
	}
	const uid = 54329
	if _, err := user.LookupId(fmt.Sprint(uid)); err == nil {
		t.Skipf("uid %d has a name on this machine; the test needs one without", uid)
	}
	echo := echoServer(t)
	s, path := socketStub(t, echo.URL)
	sockettest.OpenToAll(t, filepath.Dir(path))
	status, body := sockettest.CallAs(t, uid, uid, path, http.MethodGet, "/v1/jobs", "")
	want := fmt.Sprintf("uid %d has no user name on machine m1", uid)
	if status != http.StatusForbidden || !strings.Contains(body, want) {
		t.Fatalf("uid %d got %d %s; want 403 saying %q", uid, status, body, want)
	}
	resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if line := `netmgr_requests_denied_total{reason="unnamed_uid"} 1`; !strings.Contains(string(metrics), line) {
		t.Errorf("metrics lack %s", line)
	}
}

// isSocket reports whether path is a Unix socket.
func isSocket(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().Type() == os.ModeSocket
}

// A stream the server breaks breaks for the socket's caller too: it must
// not end as if complete, or netmgr logs -f would take a cut log for a
// whole one.
func TestUserSocketPassesOnABrokenStream(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/1/logs", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "first line\n")
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // the server breaks the stream
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, path := socketStub(t, srv.URL)
	resp, err := sockettest.HTTP(path).Get("http://netmgr-stub/v1/jobs/1/logs?follow=1")
	if err != nil {
		t.Fatalf("call the socket: %v", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if string(got) != "first line\n" || err == nil {
		t.Errorf("read %q, %v; want the first line, then an error", got, err)
	}
}
