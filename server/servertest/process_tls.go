package servertest

import (
	"fmt"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// certValidity is how long a process cluster's certificates last.
const certValidity = 7 * 24 * time.Hour

// maxSocketPath is the longest user socket path the cluster uses under its
// directory; a Unix socket's path must fit in 108 bytes.
const maxSocketPath = 100

// gossipKeyFile is the secure cluster's gossip keyring, under its tls
// directory.
const gossipKeyFile = "gossip.keyring"

// procDatabase is the --database of a secure cluster's servers: the
// tests run as root, on a machine of the pool.
const procDatabase = "allow_root_jobs\n"

// Identities of the certificates a secure cluster issues for the tests
// themselves, besides one for each process.
var (
	// pollerID is the client certificate the cluster's own waits use.
	pollerID = pki.Identity{Role: pki.RoleClient, Name: "servertest"}
	// hostID is the stub certificate of a pool machine with no stub
	// process, which vouches for the test's user when the cluster has no
	// stub whose socket it could call.
	hostID = pki.Identity{Role: pki.RoleStub, Name: "servertest-host"}
)

// procTLS is a secure process cluster's CA and the material of the
// certificates its tests use.
type procTLS struct {
	dir     string     // the CA's and certificates' files
	keyring string     // the gossip keyring file, in dir
	mu      sync.Mutex // guards files
	files   map[pki.Identity]pki.Files
	poller  *pki.Material
	host    *pki.Material
}

// prepare gives every process its user socket (stubs) and, for a secure
// cluster, its certificate, the gossip keyring and the servers the
// database allowing root jobs, and makes the client the cluster's waits
// use.
func (c *ProcCluster) prepare(secure bool) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	for _, p := range c.Stubs {
		p.Socket = filepath.Join(c.dir, p.Name, "stub.sock")
		if len(p.Socket) <= maxSocketPath {
			continue
		}
		if c.sockDir == "" {
			d, err := os.MkdirTemp("", "nmsock")
			if err != nil {
				return fmt.Errorf("user socket directory: %w", err)
			}
			c.sockDir = d
			if err := os.Chmod(d, 0o755); err != nil {
				return fmt.Errorf("user socket directory: %w", err)
			}
		}
		p.Socket = filepath.Join(c.sockDir, p.Name+".sock")
	}
	if !secure {
		var err error
		c.cl, err = client.New([]string{c.Addr()}, client.WithRetryFor(0), client.WithUser("servertest"))
		return err
	}
	ids := []pki.Identity{pollerID, hostID}
	for _, p := range c.Servers {
		ids = append(ids, pki.Identity{Role: pki.RoleServer, Name: p.Name})
	}
	for _, p := range c.Stubs {
		ids = append(ids, pki.Identity{Role: pki.RoleStub, Name: p.Name})
	}
	sec := &procTLS{dir: filepath.Join(c.dir, "tls")}
	var err error
	if sec.files, err = pki.MakeCluster(sec.dir, certValidity, ids...); err != nil {
		return err
	}
	if sec.poller, err = pki.Load(sec.files[pollerID]); err != nil {
		return err
	}
	if sec.host, err = pki.Load(sec.files[hostID]); err != nil {
		return err
	}
	sec.keyring = filepath.Join(sec.dir, gossipKeyFile)
	if err := pki.WriteKeyring(sec.keyring, [][]byte{pki.NewGossipKey()}, false); err != nil {
		return err
	}
	db := filepath.Join(c.dir, "database")
	if err := os.WriteFile(db, []byte(procDatabase), 0o644); err != nil {
		return fmt.Errorf("write database: %w", err)
	}
	for _, p := range c.Servers {
		p.TLS = sec.files[pki.Identity{Role: pki.RoleServer, Name: p.Name}]
		p.GossipKeyring = sec.keyring
		p.database = db
	}
	for _, p := range c.Stubs {
		p.TLS = sec.files[pki.Identity{Role: pki.RoleStub, Name: p.Name}]
		p.GossipKeyring = sec.keyring
	}
	c.sec = sec
	c.cl, err = client.New([]string{c.Addr()}, client.WithTLS(sec.poller), client.WithRetryFor(0))
	return err
}

// Secure reports whether the cluster runs with TLS (StartProcCluster)
// rather than --insecure (StartInsecureProcCluster).
func (c *ProcCluster) Secure() bool { return c.sec != nil }

// CAFile returns the path of the cluster CA's certificate, "" for an
// insecure cluster.
func (c *ProcCluster) CAFile() string {
	if c.sec == nil {
		return ""
	}
	return filepath.Join(c.sec.dir, pki.CAFile)
}

// GossipKeyring returns the path of the cluster's gossip keyring, which
// every process of a secure cluster encrypts gossip with; "" for an
// insecure cluster.
func (c *ProcCluster) GossipKeyring() string {
	if c.sec == nil {
		return ""
	}
	return c.sec.keyring
}

// Material returns TLS material of the cluster's CA for id, issued and
// written under the cluster's directory on first use, for tests that act
// as a particular server, stub or client; nil for an insecure cluster.
func (c *ProcCluster) Material(id pki.Identity) (*pki.Material, error) {
	if c.sec == nil {
		return nil, nil
	}
	c.sec.mu.Lock()
	defer c.sec.mu.Unlock()
	files, ok := c.sec.files[id]
	if !ok {
		ca, err := pki.LoadCA(c.sec.dir)
		if err != nil {
			return nil, fmt.Errorf("issue %s: %w", id, err)
		}
		is, err := ca.Issue(id, nil, certValidity)
		if err != nil {
			return nil, err
		}
		if files, err = is.Write(c.sec.dir); err != nil {
			return nil, err
		}
		c.sec.files[id] = files
	}
	return pki.Load(files)
}

// HTTPClient returns an HTTP client for the processes' APIs (URL): in a
// secure cluster it holds the cluster's test client certificate, which
// servers and stubs take for reads such as /metrics and /v1/agent/self.
func (c *ProcCluster) HTTPClient() *http.Client {
	if c.sec == nil {
		return &http.Client{Timeout: 10 * time.Second}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(c.sec.poller, pki.RoleServer, pki.RoleStub)}
}

// Client returns a new client for the server group with the default
// retry window, for requests that should ride through an election. In a
// secure cluster it acts as the OS user running the test on a machine of
// the pool, as the job commands do there: it holds the certificate of a
// pool machine's stub and vouches for the user, what a stub does for the
// callers of its socket. It goes straight to the servers, so it keeps
// working while a test stops, freezes or cuts off a stub (SocketClient
// goes through a stub's socket). In an insecure cluster it goes straight
// to the servers too (give WithUser).
func (c *ProcCluster) Client(opts ...client.Option) (*client.Client, error) {
	if c.sec == nil {
		return client.New([]string{c.Addr()}, opts...)
	}
	me, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("client: current user: %w", err)
	}
	return client.New([]string{c.Addr()}, append(slices.Clone(opts), client.WithTLS(c.sec.host), client.WithVouchedUser(me.Username))...)
}

// SocketClient returns a new client that sends every request through
// stub i's user socket, as the job commands on that machine do: it acts
// as the OS user running the test, as the stub's kernel tells it.
func (c *ProcCluster) SocketClient(i int, opts ...client.Option) (*client.Client, error) {
	if i < 0 || i >= len(c.Stubs) {
		return nil, fmt.Errorf("socket client: no stub %d", i)
	}
	return client.New(nil, append(slices.Clone(opts), client.WithUnixSocket(c.Stubs[i].Socket))...)
}

// StubClient returns a client for stub p's own API. In a secure cluster
// it holds the certificate of a pool machine's stub, as the other stubs
// do, which a stub takes for the outage statements stubs exchange.
func (c *ProcCluster) StubClient(p *Proc) (*client.StubClient, error) {
	if c.sec == nil {
		return client.NewStub(p.HTTPAddr)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(c.sec.host, pki.RoleStub)}
	return client.NewStub(p.HTTPAddr, client.WithHTTPClient(hc), client.WithHTTPS())
}

// Env returns the environment that points the job commands (netexec,
// netstatus, ...) at the cluster: NETMGR_ADDR, and in a secure cluster
// NETMGR_SOCKET (the first stub's user socket) and NETMGR_CACERT.
func (c *ProcCluster) Env() []string {
	env := []string{"NETMGR_ADDR=" + c.Addr()}
	if c.sec != nil {
		env = append(env, "NETMGR_CACERT="+c.CAFile())
		if len(c.Stubs) > 0 {
			env = append(env, "NETMGR_SOCKET="+c.Stubs[0].Socket)
		}
	}
	return env
}
