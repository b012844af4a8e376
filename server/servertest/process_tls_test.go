package servertest

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// A process cluster is secure by default: every process runs with its
// certificate, the servers' API is https and refuses plaintext, a job
// submitted through a stub's socket is the test's OS user's and runs as
// them, the test's own client sees it as that user's, and the test reads
// the processes' own endpoints with the cluster's test certificates.
func TestSecureProcCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping under -short: it builds netmgr and runs a cluster")
	}
	dir := t.TempDir()
	bin, err := BuildBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Jobs run as their owner, who must reach the exec dirs.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, err := StartProcCluster(bin, filepath.Join(dir, "cluster"), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(6000))
		}
	})
	if !c.Secure() || !strings.HasPrefix(c.Servers[0].URL(), "https://") {
		t.Fatalf("StartProcCluster: secure %v, server URL %s; want a TLS cluster", c.Secure(), c.Servers[0].URL())
	}
	// Gossip is encrypted too: every process has the cluster's keyring
	// (the stub registering below shows they gossip with it).
	if keys, err := pki.ReadKeyring(c.GossipKeyring()); err != nil || len(keys) != 1 {
		t.Errorf("gossip keyring %q: %d keys, %v; want one key", c.GossipKeyring(), len(keys), err)
	}
	for _, p := range append(append([]*Proc(nil), c.Servers...), c.Stubs...) {
		if args := strings.Join(p.args(nil), " "); !strings.Contains(args, "--gossip-keyring "+c.GossipKeyring()) {
			t.Errorf("%s runs without the gossip keyring: %s", p.Name, args)
		}
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitMachines(1, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Self(ctx, 0); err != nil {
		t.Errorf("Self over TLS: %v", err)
	}
	sc, err := c.StubClient(c.Stubs[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.OutageStatement(ctx); err != nil {
		t.Errorf("a stub's outage statement with the test's stub certificate: %v", err)
	}
	resp, err := c.HTTPClient().Get(c.Stubs[0].URL() + "/metrics")
	if err != nil {
		t.Fatalf("stub metrics with the test certificate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("stub metrics with the test certificate: %s", resp.Status)
	}
	if resp, err := http.Get("http://" + c.Servers[0].HTTPAddr + "/v1/jobs"); err == nil {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plaintext to the TLS API: %s %s; want it refused", resp.Status, data)
		}
	}

	sock, err := c.SocketClient(0)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "uid")
	sub, err := sock.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", "id -u > " + out},
		Min:      1,
	}})
	if err != nil {
		t.Fatalf("submit through the stub's socket: %v", err)
	}
	job, err := cl.WaitJob(ctx, strconv.FormatUint(sub.ID, 10), client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	if job.Owner != me.Username || job.State != client.JobDone || strings.TrimSpace(string(data)) != me.Uid {
		t.Errorf("job: owner %q, state %s, ran as uid %q; want %s's, done, uid %s", job.Owner, job.State, strings.TrimSpace(string(data)), me.Username, me.Uid)
	}
}
