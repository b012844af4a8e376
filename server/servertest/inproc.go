package servertest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/stub"
)

// Cluster is a server group in this process. Servers talk Raft over an
// in-memory transport (so tests can cut links) and gossip and HTTP over
// loopback.
type Cluster struct {
	t        testing.TB
	killOnce sync.Once
	Servers  []*server.Server
	cfgs     []server.Config // as each server was last started
	trans    []*raft.InmemTransport
	Stubs    []*stub.Stub
	dir      string
	// pki is the cluster's CA and certificates; nil for an insecure
	// cluster (NewInsecureCluster).
	pki *testPKI
}

// FastRaft shortens Raft's timeouts for tests, as hashicorp/raft's own
// test clusters do.
func FastRaft(c *raft.Config) {
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
}

// Logger returns a logger for test servers: quiet unless NETMGR_TEST_LOG is
// set, then debug to stderr.
func Logger() *slog.Logger {
	if os.Getenv("NETMGR_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// NewCluster starts n servers that form a group by gossip (--bootstrap-expect n)
// on Raft's in-memory transport and stores, and stops them when the test
// ends. The cluster is secure as a real one: a CA of its own, TLS on every
// API, and a database that allows root jobs (the tests run as root).
func NewCluster(t testing.TB, n int) *Cluster { return newCluster(t, n, false, true) }

// NewClusterConfig is NewCluster with edit called on each server's
// configuration (its index and the configuration) before it starts.
func NewClusterConfig(t testing.TB, n int, edit func(i int, cfg *server.Config)) *Cluster {
	return newClusterEdit(t, n, false, true, edit)
}

// NewInsecureCluster is NewCluster without TLS, as `--insecure` runs: a
// request is whoever its X-Netmgr-User header says.
func NewInsecureCluster(t testing.TB, n int) *Cluster { return newCluster(t, n, false, false) }

// NewDurableCluster is NewCluster on the production Raft path: TCP
// transport on loopback (TLS), raft-boltdb with fsync and file snapshots,
// default timeouts. Isolate and Heal do nothing on it.
func NewDurableCluster(t testing.TB, n int) *Cluster { return newCluster(t, n, true, true) }

// rootJobsDatabase is the database a secure test cluster starts with: the
// tests run as root, on a machine that is a pool machine.
const rootJobsDatabase = "allow_root_jobs\n"

func newCluster(t testing.TB, n int, durable, secure bool) *Cluster {
	t.Helper()
	return newClusterEdit(t, n, durable, secure, nil)
}

func newClusterEdit(t testing.TB, n int, durable, secure bool, edit func(int, *server.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t, dir: t.TempDir()}
	var dbFile string
	if secure {
		c.pki = newTestPKI(t, filepath.Join(c.dir, "tls"))
		dbFile = filepath.Join(c.dir, "root-jobs.db")
		if err := os.WriteFile(dbFile, []byte(rootJobsDatabase), 0o644); err != nil {
			t.Fatalf("write database: %v", err)
		}
	}
	// Stubs running as root start jobs as their owners; let any user reach
	// the exec dirs under the test's temp dir (made 0700 by the testing
	// package).
	for _, d := range []string{c.dir, filepath.Dir(c.dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatalf("open temp dir to job owners: %v", err)
		}
	}
	var raftPorts []int
	if !durable {
		for range n {
			_, tr := raft.NewInmemTransport("")
			c.trans = append(c.trans, tr)
		}
		c.connectAll()
	} else {
		// From below the ephemeral range (freePorts): RestartServer binds
		// a server's Raft port again, and a port the kernel handed out for
		// ":0" may meanwhile be any connection's source port ("bind:
		// address already in use", seen in a clean-clone run).
		var err error
		if raftPorts, err = freePorts(n); err != nil {
			t.Fatalf("raft ports: %v", err)
		}
	}
	for i := range n {
		cfg := server.Config{
			Name:            fmt.Sprintf("s%d", i),
			HTTPAddr:        "127.0.0.1:0",
			GossipAddr:      "127.0.0.1:0",
			BootstrapExpect: n,
			OutageGrace:     server.DefaultOutageGrace,
			Logger:          Logger(),
			DatabaseFile:    dbFile,
		}
		if c.pki != nil {
			cfg.TLS = c.pki.material(pki.Identity{Role: pki.RoleServer, Name: cfg.Name})
		}
		// Every server keeps its history (history.db) in its data dir,
		// the Raft stores too when durable.
		cfg.DataDir = filepath.Join(c.dir, cfg.Name)
		if durable {
			cfg.RaftAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(raftPorts[i]))
		} else {
			cfg.RaftTransport, cfg.InmemStore, cfg.TuneRaft = c.trans[i], true, FastRaft
		}
		if i > 0 {
			cfg.Join = []string{c.Servers[0].GossipAddr()}
		}
		if edit != nil {
			edit(i, &cfg)
		}
		s, err := server.New(cfg)
		if err != nil {
			t.Fatalf("start server %d: %v", i, err)
		}
		c.Servers = append(c.Servers, s)
		c.cfgs = append(c.cfgs, cfg)
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return c
}

func (c *Cluster) connectAll() {
	for i, a := range c.trans {
		for j, b := range c.trans {
			if i != j {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
}

// WaitLeader waits until exactly one reachable server leads and returns
// its index.
func (c *Cluster) WaitLeader(skip ...int) int {
	c.t.Helper()
	var leader int
	testwait.For(c.t, 10*time.Second, "one leader", func() bool {
		leader = -1
		for i, s := range c.Servers {
			if contains(skip, i) || !s.IsLeader() {
				continue
			}
			if leader >= 0 {
				return false
			}
			leader = i
		}
		return leader >= 0
	})
	return leader
}

// Isolate cuts server i's Raft links to every other server.
func (c *Cluster) Isolate(i int) {
	if c.trans == nil {
		return
	}
	c.trans[i].DisconnectAll()
	for j, tr := range c.trans {
		if j != i {
			tr.Disconnect(c.trans[i].LocalAddr())
		}
	}
}

// Heal reconnects every Raft link.
func (c *Cluster) Heal() { c.connectAll() }

// Addrs returns the servers' API addresses.
func (c *Cluster) Addrs(only ...int) []string {
	var out []string
	for i, s := range c.Servers {
		if len(only) == 0 || contains(only, i) {
			out = append(out, s.HTTPAddr())
		}
	}
	return out
}

// Client returns a client for the given servers (all when none named),
// acting as the OS user running the test, as the CLI does on a pool
// machine.
func (c *Cluster) Client(only ...int) *client.Client {
	c.t.Helper()
	return c.ClientAs(CurrentUser(c.t), only...)
}

// ClientAs returns a client for the given servers (all when none named)
// acting as user on a machine of the pool: with TLS, what a stub's socket
// does for its callers (a stub certificate vouching for the user); on an
// insecure cluster, the user header.
func (c *Cluster) ClientAs(user string, only ...int) *client.Client {
	c.t.Helper()
	opts := []client.Option{client.WithUser(user)}
	if c.pki != nil {
		opts = []client.Option{client.WithTLS(c.pki.material(poolHost)), client.WithVouchedUser(user)}
	}
	cl, err := client.New(c.Addrs(only...), opts...)
	if err != nil {
		c.t.Fatalf("new client: %v", err)
	}
	return cl
}

// Material returns TLS material for id signed by the cluster's CA (made
// on first use), for tests that act as a particular server, stub or
// client; nil on an insecure cluster.
func (c *Cluster) Material(id pki.Identity) *pki.Material {
	c.t.Helper()
	if c.pki == nil {
		return nil
	}
	return c.pki.material(id)
}

// Secure reports whether the cluster runs with TLS.
func (c *Cluster) Secure() bool { return c.pki != nil }

// AddStub starts a stub in this process that joins the group's gossip pool
// and forks real jobs under an exec dir in the test's temp dir.
func (c *Cluster) AddStub(name string) *stub.Stub { return c.AddStubInit(name, "") }

// AddStubInit is AddStub with an init file: its text is written to the
// stub's directory and passed as --init.
func (c *Cluster) AddStubInit(name, init string) *stub.Stub {
	c.t.Helper()
	return c.AddStubConfig(name, init, nil)
}

// AddStubConfig is AddStubInit with edit, when not nil, applied to the
// stub's Config before it starts (an owner policy, say).
func (c *Cluster) AddStubConfig(name, init string, edit func(*stub.Config)) *stub.Stub {
	c.t.Helper()
	dir := filepath.Join(c.dir, name)
	cfg := stub.Config{
		Name:       name,
		DataDir:    filepath.Join(dir, "data"),
		HTTPAddr:   "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0",
		Join:       []string{c.Servers[0].GossipAddr()},
		ExecDir:    filepath.Join(dir, "exec"),
		Logger:     Logger(),
	}
	if c.pki != nil {
		cfg.TLS = c.pki.material(pki.Identity{Role: pki.RoleStub, Name: name})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatalf("stub dir: %v", err)
	}
	if init != "" {
		cfg.InitFile = filepath.Join(dir, "init")
		if err := os.WriteFile(cfg.InitFile, []byte(init), 0o644); err != nil {
			c.t.Fatalf("write init file: %v", err)
		}
	}
	if edit != nil {
		edit(&cfg)
	}
	st, err := stub.New(cfg)
	if err != nil {
		c.t.Fatalf("start stub %s: %v", name, err)
	}
	c.Stubs = append(c.Stubs, st)
	c.t.Cleanup(func() { _ = st.Shutdown() })
	// Cleanups run last-registered first, so this runs before any stub
	// stops: jobs run under supervisors that outlive their stub, and a test
	// must not leave them behind.
	c.t.Cleanup(c.killJobsOnce)
	return st
}

// killJobsOnce kills every unfinished job through the API and waits a
// little for them to end; what is still running then is logged.
func (c *Cluster) killJobsOnce() {
	c.killOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cl := c.ClientAs("root")
		cl = cl.With(client.WithRetryFor(2 * time.Second))
		jobs, err := cl.Jobs(ctx)
		if err != nil {
			c.t.Logf("cleanup: list jobs: %v", err)
			return
		}
		for _, j := range jobs {
			if j.State == client.JobRunning || j.State == client.JobQueued {
				_, _ = cl.Kill(ctx, strconv.FormatUint(j.ID, 10), client.KillRequest{Signal: "KILL"})
			}
		}
		for _, j := range jobs {
			if j.State == client.JobRunning {
				if _, err := cl.WaitJob(ctx, strconv.FormatUint(j.ID, 10), client.WaitDone); err != nil {
					c.t.Logf("cleanup: job %d did not end: %v", j.ID, err)
				}
			}
		}
	})
}

// CurrentUser is the name of the OS user running the test.
func CurrentUser(t testing.TB) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	return u.Username
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
