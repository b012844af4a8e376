package servertest

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// poolHost is the stub identity test clients use to act as a user of a
// pool machine (Cluster.ClientAs).
var poolHost = pki.Identity{Role: pki.RoleStub, Name: "test-host"}

// testPKI is a test cluster's throw-away CA and the certificates it has
// issued, made on first use.
type testPKI struct {
	t   testing.TB
	dir string
	ca  *pki.CA

	mu     sync.Mutex
	issued map[pki.Identity]*pki.Material
}

// newTestPKI makes a CA in dir.
func newTestPKI(t testing.TB, dir string) *testPKI {
	t.Helper()
	ca, err := pki.NewCA("netmgr test CA", 24*time.Hour)
	if err != nil {
		t.Fatalf("make test CA: %v", err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatalf("write test CA: %v", err)
	}
	return &testPKI{t: t, dir: dir, ca: ca, issued: make(map[pki.Identity]*pki.Material)}
}

// material returns the loaded certificate of id, issuing it first if need be.
func (p *testPKI) material(id pki.Identity) *pki.Material {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := p.issued[id]; ok {
		return m
	}
	is, err := p.ca.Issue(id, nil, 24*time.Hour)
	if err != nil {
		p.t.Fatalf("issue %s certificate: %v", id, err)
	}
	files, err := is.Write(p.dir)
	if err != nil {
		p.t.Fatalf("write %s certificate: %v", id, err)
	}
	m, err := pki.Load(files)
	if err != nil {
		p.t.Fatalf("load %s certificate: %v", id, err)
	}
	p.issued[id] = m
	return m
}

// Files returns the paths of id's certificate, key and the CA, issuing the
// certificate first if need be; for tests that start processes.
func (c *Cluster) Files(id pki.Identity) pki.Files {
	c.t.Helper()
	c.pki.material(id)
	cert, key := pki.Issued{ID: id}.FileNames()
	return pki.Files{CA: c.pki.dir + "/" + pki.CAFile, Cert: c.pki.dir + "/" + cert, Key: c.pki.dir + "/" + key}
}

// ClientFor returns a client for every server that proves itself with
// id's certificate and vouches for nobody: a stub reporting its jobs, a
// server, or a client certificate's user.
func (c *Cluster) ClientFor(id pki.Identity) *client.Client {
	c.t.Helper()
	cl, err := client.New(c.Addrs(), client.WithTLS(c.Material(id)))
	if err != nil {
		c.t.Fatalf("new client: %v", err)
	}
	return cl
}

// HTTPClient returns an HTTP client for requests of a test's own making
// to the servers: over TLS as a user of a pool machine, the OS user
// running the test (as Client), or plain on an insecure cluster. URL
// gives the address's scheme.
func (c *Cluster) HTTPClient() *http.Client {
	c.t.Helper()
	if c.pki == nil {
		return &http.Client{Timeout: 30 * time.Second}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &vouching{
		user: CurrentUser(c.t),
		next: client.NewTLSTransport(c.pki.material(poolHost), pki.RoleServer, pki.RoleStub),
	}}
}

// URL returns the URL of path on the server API at addr.
func (c *Cluster) URL(addr, path string) string {
	if c.pki == nil {
		return "http://" + addr + path
	}
	return "https://" + addr + path
}

// vouching sets VouchedUserHeader on every request, as a stub's socket does.
type vouching struct {
	user string
	next http.RoundTripper
}

func (v *vouching) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(client.VouchedUserHeader, v.user)
	return v.next.RoundTrip(req)
}

// StubClient returns a client for the stub API at addr that proves itself
// with a server certificate (name "tester"), as the servers do; plain on
// an insecure cluster.
func (c *Cluster) StubClient(addr string) *client.StubClient {
	c.t.Helper()
	var opts []client.Option
	if c.pki != nil {
		m := c.pki.material(pki.Identity{Role: pki.RoleServer, Name: "tester"})
		opts = []client.Option{
			client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(m, pki.RoleStub)}),
			client.WithHTTPS(),
		}
	}
	sc, err := client.NewStub(addr, opts...)
	if err != nil {
		c.t.Fatalf("stub client: %v", err)
	}
	return sc
}

// CADir is the directory of the cluster's CA certificate and key
// (ca.pem, ca-key.pem), for tools that issue certificates themselves
// (netmgr sim --ca-dir); empty on an insecure cluster.
func (c *Cluster) CADir() string {
	if c.pki == nil {
		return ""
	}
	return c.pki.dir
}
