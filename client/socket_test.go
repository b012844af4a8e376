package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// A client WithUnixSocket sends every request to the socket, whatever
// server addresses it was given or is given later.
func TestWithUnixSocketSendsEverythingToTheSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stub.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	hosts := make(chan string, 4)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host + " " + r.Method + " " + r.URL.Path
		jsonHandler(t, http.StatusOK, []client.Job{{ID: 7}})(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	cl, err := client.New([]string{deadAddr(t)}, client.WithUnixSocket(path), client.WithRetryFor(time.Second))
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	if got := cl.Addrs(); len(got) != 1 || got[0] != "http://"+client.SocketHost {
		t.Fatalf("Addrs() = %v, want [http://%s]", got, client.SocketHost)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	jobs, err := cl.Jobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].ID != 7 {
		t.Fatalf("Jobs over the socket = %v, %v; want job 7", jobs, err)
	}
	if err := cl.SetAddrs([]string{deadAddr(t)}); err != nil {
		t.Fatalf("SetAddrs: %v", err)
	}
	if _, err := cl.Jobs(ctx); err != nil {
		t.Fatalf("Jobs after SetAddrs: %v", err)
	}
	if got, want := <-hosts, "netmgr-stub GET /v1/jobs"; got != want {
		t.Errorf("the socket saw %q, want %q", got, want)
	}
	if got, want := <-hosts, " GET /v1/jobs"; !strings.HasSuffix(got, want) {
		t.Errorf("after SetAddrs the socket saw %q, want a GET /v1/jobs", got)
	}
}

// With no stub behind the socket the client reports the servers
// unreachable, naming the socket's address, instead of hanging.
func TestWithUnixSocketNoStub(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stub.sock")
	cl, err := client.New(nil, client.WithUnixSocket(path), client.WithRetryFor(200*time.Millisecond))
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cl.Jobs(ctx)
	if !errors.Is(err, client.ErrNoServer) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Jobs with no stub listening: %v; want ErrNoServer naming %s", err, path)
	}
}
