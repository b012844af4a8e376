package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// osUser is an OS user a test made, with what it takes to run as them.
type osUser struct {
	name     string
	uid, gid int
	home     string
}

// newOSUser makes a real OS user with useradd, named prefix and a random
// suffix, and removes it (and its home) with userdel -r at cleanup.
func newOSUser(t *testing.T, prefix string) osUser {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", "-r", name).CombinedOutput(); err != nil {
			t.Logf("userdel -r %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("look up new user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return osUser{name: name, uid: uid, gid: gid, home: u.HomeDir}
}

// runAs runs the netmgr binary as u with the cluster's environment (its
// stub socket) and returns the exit code and the output.
func runAs(t *testing.T, c *servertest.ProcCluster, u osUser, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, netmgrBinary(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + u.home, "USER=" + u.name, "NETMGR_RETRY_FOR=10s"}, c.Env()...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return exitErr.ExitCode(), out.String()
	}
	t.Fatalf("run netmgr %s as %s: %v\n%s", strings.Join(args, " "), u.name, err, out.String())
	return 0, ""
}

// openToEveryone adds read and search rights for everyone to dir and
// each directory above it that lacks them (the testing package makes its
// temporary directories 0700), leaving / and /tmp as they are. It climbs
// past os.TempDir, which a test may have pointed at one of its own
// directories.
func openToEveryone(t *testing.T, dir string) {
	t.Helper()
	for d := filepath.Clean(dir); d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o055 != 0o055 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o055); err != nil {
				t.Fatalf("open %s to every user: %v", d, err)
			}
		}
	}
}

// On a TLS cluster of real processes, users of a pool machine are who the
// kernel says they are and nobody else: a job user A submits through the
// stub's socket is A's and runs as A's uid; user B cannot kill it, A can.
// And the doors around the socket stay shut: plaintext to a TLS port, a
// Start straight to a stub from a client certificate or from no
// certificate, and a forged user header over a client certificate or a
// token.
func TestIdentityEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs a cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: the test creates OS users (useradd) and runs netmgr as them, which needs root")
	}
	for _, tool := range []string{"useradd", "userdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: no %s on this machine to create the test's users: %v", tool, err)
		}
	}
	dir := t.TempDir()
	openToEveryone(t, dir)
	openToEveryone(t, filepath.Dir(netmgrBinary(t)))
	c, root := procCluster(t, dir, 3, 2)
	if !c.Secure() {
		t.Fatal("the process cluster runs insecure; this test is about the secure one")
	}
	a, b := newOSUser(t, "nmta"), newOSUser(t, "nmtb")
	// The socket's directory lies under dir; every user must reach it.
	openToEveryone(t, filepath.Dir(c.Stubs[0].Socket))

	out := filepath.Join(dir, "a-out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(out, a.uid, a.gid); err != nil {
		t.Fatal(err)
	}
	uidFile := filepath.Join(out, "uid")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A submits through the socket; the job is A's and runs as A.
	code, text := runAs(t, c, a, "exec", "--wait", "started", "/bin/sh", "-c", "id -u > "+uidFile+"; exec sleep 300")
	if code != 0 {
		t.Fatalf("netmgr exec as %s: exit %d\n%s", a.name, code, text)
	}
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("netmgr exec as %s names no job id:\n%s", a.name, text)
	}
	ref := m[1]
	t.Cleanup(func() {
		_, _ = root.Kill(context.Background(), ref, client.KillRequest{Signal: "KILL"})
	})
	job, err := root.Job(ctx, ref)
	if err != nil {
		t.Fatalf("job %s: %v", ref, err)
	}
	if job.Owner != a.name {
		t.Fatalf("job %s is %q's, want %s's (who submitted it)", ref, job.Owner, a.name)
	}
	testwait.For(t, 30*time.Second, "the job to write its uid", func() bool {
		data, err := os.ReadFile(uidFile)
		return err == nil && strings.HasSuffix(string(data), "\n")
	})
	if data, _ := os.ReadFile(uidFile); strings.TrimSpace(string(data)) != strconv.Itoa(a.uid) {
		t.Fatalf("job %s ran as uid %q, want %s's %d", ref, strings.TrimSpace(string(data)), a.name, a.uid)
	}

	// B may not kill it.
	code, text = runAs(t, c, b, "kill", ref)
	if code != 1 || !strings.Contains(text, "belongs to "+a.name) || !strings.Contains(text, b.name) {
		t.Fatalf("netmgr kill %s as %s: exit %d\n%s\nwant exit 1 and a refusal naming the owner %s and %s", ref, b.name, code, text, a.name, b.name)
	}
	t.Logf("netmgr kill %s as %s: exit %d: %s", ref, b.name, code, strings.TrimSpace(text))
	stillRunning(t, root, ref)

	t.Run("plaintext to a TLS port", func(t *testing.T) {
		before := jobCount(t, root)
		for _, p := range []*servertest.Proc{c.Servers[0], c.Stubs[0]} {
			body := `{"spec":{"binaries":{"*":"/bin/true"},"min":1}}`
			resp, err := http.Post("http://"+p.HTTPAddr+"/v1/jobs", "application/json", strings.NewReader(body))
			if err == nil {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("plain HTTP to %s: %s %s; want the connection refused or 400", p.Name, resp.Status, data)
				}
			}
		}
		if got := jobCount(t, root); got != before {
			t.Errorf("plain HTTP submits made %d jobs", got-before)
		}
	})

	t.Run("start straight to a stub", func(t *testing.T) {
		marker := filepath.Join(dir, "direct-start")
		start, _ := json.Marshal(client.StartBatchRequest{Starts: []client.StartRequest{{
			JobID: 999999, JobName: "forged", Instance: 0, Attempt: 1, Owner: "root",
			Binary: "/bin/sh", Args: []string{"-c", "touch " + marker},
		}}})
		stubURL := c.Stubs[1].URL() + "/v1/starts"

		withCert := tlsHTTP(t, c, pki.Identity{Role: pki.RoleClient, Name: b.name})
		resp, err := withCert.Post(stubURL, "application/json", bytes.NewReader(start))
		if err != nil {
			t.Fatalf("POST /v1/starts with a client certificate: %v", err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST /v1/starts with a client certificate: %s %s; want 403", resp.Status, data)
		}

		noCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: caPool(t, c)},
		}}
		if resp, err := noCert.Post(stubURL, "application/json", bytes.NewReader(start)); err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("POST /v1/starts with no certificate: %s %s; want the handshake to fail", resp.Status, data)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a forged Start ran: %s exists (%v)", marker, err)
		}
	})

	t.Run("forged user header", func(t *testing.T) {
		kill, _ := json.Marshal(client.KillRequest{Signal: "KILL"})
		killURL := c.Servers[0].URL() + "/v1/jobs/" + ref + "/kill"
		forge := func(req *http.Request) {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(client.UserHeader, a.name)
			req.Header.Set(client.VouchedUserHeader, a.name)
			req.Header.Set(client.ForwardedPrincipalHeader, `{"user":"`+a.name+`","machine":"`+c.Stubs[0].Name+`"}`)
		}

		req, _ := http.NewRequest(http.MethodPost, killURL, bytes.NewReader(kill))
		forge(req)
		resp, err := tlsHTTP(t, c, pki.Identity{Role: pki.RoleClient, Name: b.name}).Do(req)
		if err != nil {
			t.Fatalf("kill with %s's certificate: %v", b.name, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), b.name) {
			t.Errorf("kill with %s's certificate claiming %s: %s %s; want 403 naming %s", b.name, a.name, resp.Status, data, b.name)
		}

		req, _ = http.NewRequest(http.MethodPost, killURL, bytes.NewReader(kill))
		forge(req)
		req.Header.Set("Authorization", "Bearer not-a-token-of-"+a.name)
		noCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: caPool(t, c)},
		}}
		resp, err = noCert.Do(req)
		if err != nil {
			t.Fatalf("kill with a token: %v", err)
		}
		data, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("kill with a bad token claiming %s: %s %s; want 401", a.name, resp.Status, data)
		}
		stillRunning(t, root, ref)
	})

	// A may kill it.
	code, text = runAs(t, c, a, "kill", ref)
	if code != 0 {
		t.Fatalf("netmgr kill %s as its owner %s: exit %d\n%s", ref, a.name, code, text)
	}
	if job, err = root.WaitJob(ctx, ref, client.WaitDone); err != nil {
		t.Fatalf("wait for job %s to end: %v", ref, err)
	}
	if job.State != client.JobKilled {
		t.Errorf("job %s after its owner's kill: %s, want %s", ref, job.State, client.JobKilled)
	}
}

// stillRunning fails the test unless job ref still runs.
func stillRunning(t *testing.T, cl *client.Client, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	job, err := cl.Job(ctx, ref)
	if err != nil {
		t.Fatalf("job %s: %v", ref, err)
	}
	if job.State != client.JobRunning {
		t.Fatalf("job %s is %s after a refused kill, want %s", ref, job.State, client.JobRunning)
	}
}

// jobCount is how many jobs the cluster holds.
func jobCount(t *testing.T, cl *client.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jobs, err := cl.Jobs(ctx)
	if err != nil {
		t.Fatalf("jobs: %v", err)
	}
	return len(jobs)
}

// tlsHTTP is an HTTP client holding a certificate of the cluster's CA for
// id, which takes servers and stubs for peers.
func tlsHTTP(t *testing.T, c *servertest.ProcCluster, id pki.Identity) *http.Client {
	t.Helper()
	m, err := c.Material(id)
	if err != nil {
		t.Fatalf("certificate for %s: %v", id, err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(m, pki.RoleServer, pki.RoleStub)}
}

// caPool trusts the cluster's CA.
func caPool(t *testing.T, c *servertest.ProcCluster) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	data, err := os.ReadFile(c.CAFile())
	if err != nil || !pool.AppendCertsFromPEM(data) {
		t.Fatalf("read the cluster's CA %s: %v", c.CAFile(), err)
	}
	return pool
}
