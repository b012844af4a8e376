package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// fileCluster is a one-server, one-stub cluster whose processes are
// configured entirely by server.toml and stub.toml, as a packaged
// install is: TLS, gossip keyring and database included.
type fileCluster struct {
	etc      string // the files as written: server.toml, stub.toml, database, tls/
	api      string // the server's API address on 127.0.0.1
	stubName string
	stubTLS  *pki.Material // the stub's certificate, which vouches for the test's user
}

// fileClusterPaths says where the cluster's processes see its files: for
// processes on this host the written paths themselves, in a container the
// places the package uses.
type fileClusterPaths struct {
	etc    string // where server.toml and the rest are seen
	state  string // the parent of the data and exec directories
	socket string // the stub's user socket; "" leaves the stub's default
}

// writeFileCluster writes into etc the configuration of a one-server,
// one-stub cluster on free ports of 127.0.0.1: the TLS material and
// gossip keyring under etc/tls, a database allowing root jobs, and
// server.toml and stub.toml naming them as seen, paths say where.
func writeFileCluster(t *testing.T, etc string, seen fileClusterPaths) *fileCluster {
	t.Helper()
	ports, err := servertest.FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	serverID := pki.Identity{Role: pki.RoleServer, Name: "s1"}
	stubID := pki.Identity{Role: pki.RoleStub, Name: "m1"}
	files, err := pki.MakeCluster(filepath.Join(etc, "tls"), time.Hour, serverID, stubID)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKeyring(filepath.Join(etc, "tls", defaultKeyringFile), [][]byte{pki.NewGossipKey()}, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "database"), []byte("allow_root_jobs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tls := func(id pki.Identity) string {
		f := files[id]
		in := func(p string) string { return filepath.Join(seen.etc, "tls", filepath.Base(p)) }
		return fmt.Sprintf("ca-file = %q\ncert-file = %q\nkey-file = %q\ngossip-keyring = %q\n",
			in(f.CA), in(f.Cert), in(f.Key), filepath.Join(seen.etc, "tls", defaultKeyringFile))
	}
	server := fmt.Sprintf("# written by %s\nname = %q\ndata-dir = %q\nhttp = %q\nraft = %q\ngossip = %q\n"+
		"bootstrap-expect = 1\ndatabase = %q\n",
		t.Name(), serverID.Name, filepath.Join(seen.state, "server"), addr(0), addr(1), addr(2),
		filepath.Join(seen.etc, "database")) + tls(serverID)
	stub := fmt.Sprintf("# written by %s\nname = %q\ndata-dir = %q\nhttp = %q\ngossip = %q\njoin = [%q]\n"+
		"exec-dir = %q\nmin-free-disk = \"0\"\nmin-free-inodes = \"0\"\n",
		t.Name(), stubID.Name, filepath.Join(seen.state, "stub"), addr(3), addr(4), addr(2),
		filepath.Join(seen.state, "exec")) + tls(stubID)
	if seen.socket != "" {
		stub += fmt.Sprintf("socket = %q\n", seen.socket)
	}
	for name, text := range map[string]string{"server.toml": server, "stub.toml": stub} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stubTLS, err := pki.Load(files[stubID])
	if err != nil {
		t.Fatal(err)
	}
	return &fileCluster{etc: etc, api: addr(0), stubName: stubID.Name, stubTLS: stubTLS}
}

// client returns a client of the cluster acting as user, vouched for by
// the cluster's stub as a job command on its machine would be.
func (c *fileCluster) client(t *testing.T, user string) *client.Client {
	t.Helper()
	cl, err := client.New([]string{c.api}, client.WithTLS(c.stubTLS), client.WithVouchedUser(user), client.WithRetryFor(0))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// runJob waits for the cluster's leader and its one machine, then
// submits BINARY ARGS... as user and waits until the job is done.
func (c *fileCluster) runJob(t *testing.T, user string, timeout time.Duration, binary string, args ...string) client.Job {
	t.Helper()
	cl := c.client(t, user)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	testwait.For(t, timeout, "the server to lead", func() bool {
		srv, err := cl.Servers(ctx)
		return err == nil && len(srv) == 1 && srv[0].Role == "leader"
	})
	testwait.For(t, timeout, "machine "+c.stubName+" to be up", func() bool {
		ms, err := cl.Machines(ctx)
		return err == nil && len(ms) == 1 && ms[0].Name == c.stubName && ms[0].State == client.MachineUp
	})
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: binary}, Args: args,
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx, fmt.Sprint(sub.ID), client.WaitDone)
	if err != nil {
		t.Fatalf("wait for job %d: %v", sub.ID, err)
	}
	if job.State != client.JobDone {
		t.Fatalf("job %d ended %s, want %s: %+v", sub.ID, job.State, client.JobDone, job)
	}
	return job
}

// startConfigured starts `netmgr ROLE --config FILE` with its output in
// dir/ROLE.log, printed if the test fails; it is stopped with SIGTERM at
// cleanup.
func startConfigured(t *testing.T, dir, role, config string) {
	t.Helper()
	logPath := filepath.Join(dir, role+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(netmgrBinary(t), role, "--config", config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("netmgr %s log:\n%s", role, out)
		}
	})
}

// TestConfigFileCluster starts a server and a stub from nothing but their
// configuration files (`netmgr server --config server.toml`) and runs a
// job on them, with TLS and the gossip keyring the files name.
func TestConfigFileCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping process test under -short: it builds netmgr and runs a server and a stub")
	}
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "var")
	c := writeFileCluster(t, etc, fileClusterPaths{etc: etc, state: state, socket: filepath.Join(dir, "stub.sock")})
	startConfigured(t, dir, "server", filepath.Join(etc, "server.toml"))
	startConfigured(t, dir, "stub", filepath.Join(etc, "stub.toml"))
	c.runJob(t, servertest.CurrentUser(t), time.Minute, netmgrBinary(t), "version")
	for _, sub := range []string{"server", "stub", "exec"} {
		if _, err := os.Stat(filepath.Join(state, sub)); err != nil {
			t.Errorf("the directory the file names: %v", err)
		}
	}
	if got, err := os.ReadDir(state); err == nil && len(got) != 3 {
		t.Errorf("%s holds %d entries, want the 3 the files name", state, len(got))
	}
}
