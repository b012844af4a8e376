package pki

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// Files names a process's TLS material on disk.
type Files struct {
	// CA is the cluster CA certificate (ca.pem). Required.
	CA string
	// Cert and Key are this process's certificate and key; both empty
	// for a client that authenticates otherwise (a token).
	Cert, Key string
}

// ErrNoCertificate means a peer presented no certificate where one is
// required.
var ErrNoCertificate = errors.New("no certificate")

// Material is a process's CA pool and certificate, reloadable from their
// files. It is safe for concurrent use.
type Material struct {
	files Files
	cur   atomic.Pointer[loaded]
}

// loaded is one reading of the files.
type loaded struct {
	pool *x509.CertPool
	cert *tls.Certificate // nil without Cert/Key
	self Identity
	// clusterID names the CA (ClusterID).
	clusterID string
}

// Load reads the material files names.
func Load(files Files) (*Material, error) {
	if files.CA == "" {
		return nil, fmt.Errorf("load TLS material: no CA file")
	}
	if (files.Cert == "") != (files.Key == "") {
		return nil, fmt.Errorf("load TLS material: give both a certificate and its key, or neither")
	}
	m := &Material{files: files}
	if err := m.Reload(); err != nil {
		return nil, err
	}
	return m, nil
}

// Reload reads the files again; on an error the material in use stays.
func (m *Material) Reload() error {
	caPEM, err := os.ReadFile(m.files.CA)
	if err != nil {
		return fmt.Errorf("load CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("load CA %s: no certificate in it", m.files.CA)
	}
	l := &loaded{pool: pool, clusterID: clusterID(caPEM)}
	if m.files.Cert != "" {
		cert, err := tls.LoadX509KeyPair(m.files.Cert, m.files.Key)
		if err != nil {
			return fmt.Errorf("load certificate %s: %w", m.files.Cert, err)
		}
		leaf := cert.Leaf
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return fmt.Errorf("load certificate %s: not signed by the CA in %s: %w", m.files.Cert, m.files.CA, err)
		}
		if l.self, err = IdentityOf(leaf); err != nil {
			return fmt.Errorf("load certificate %s: %w", m.files.Cert, err)
		}
		l.cert = &cert
	}
	m.cur.Store(l)
	return nil
}

// ClusterID is a short stable name of the cluster the CA stands for: the
// first 16 hex digits of the SHA-256 of the first certificate in the CA
// file. Two clusters with CAs of their own never share it; it changes
// when the CA does.
func (m *Material) ClusterID() string { return m.cur.Load().clusterID }

// clusterID is ClusterID of the CA file caPEM.
func clusterID(caPEM []byte) string {
	for rest := caPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			sum := sha256.Sum256(b.Bytes)
			return hex.EncodeToString(sum[:8])
		}
	}
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:8])
}

// Self is the identity of this process's certificate (zero without one).
func (m *Material) Self() Identity { return m.cur.Load().self }

// HasCert reports whether the material holds a certificate of its own.
func (m *Material) HasCert() bool { return m.cur.Load().cert != nil }

// NotAfter is when this process's certificate expires (zero without one).
func (m *Material) NotAfter() time.Time {
	if c := m.cur.Load().cert; c != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}

// clusterCurves are the key exchanges a netmgr process offers when it
// dials a peer: the post-quantum hybrid on P-256 (ML-KEM-768, as in Go's
// default X25519MLKEM768, with its classical half on the assembly P-256
// code), then P-256 alone. crypto/tls ignores the order of a list, so
// X25519 is left out to make the hybrid on P-256 the one chosen; it
// takes a fifth off a mutual handshake's CPU on amd64
// (BenchmarkMutualHandshake; DESIGN, "Handshakes when a pool starts at
// once"). Listeners keep Go's defaults, which include it, so browsers and
// curl get X25519MLKEM768 or X25519 as before.
var clusterCurves = []tls.CurveID{tls.SecP256r1MLKEM768, tls.CurveP256}

// ServerConfig is the TLS configuration of a listener: TLS 1.3, this
// process's certificate, and client certificates verified against the CA
// when given. require makes a client certificate mandatory (a stub's API,
// Raft); without it a client may come with none and prove itself
// otherwise (a token), and handlers check PeerIdentity.
func (m *Material) ServerConfig(require bool) *tls.Config {
	auth := tls.VerifyClientCertIfGiven
	if require {
		auth = tls.RequireAndVerifyClientCert
	}
	base := &tls.Config{MinVersion: tls.VersionTLS13}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		l := m.cur.Load()
		if l.cert == nil {
			return nil, fmt.Errorf("serve TLS: %w of our own", ErrNoCertificate)
		}
		return &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{*l.cert},
			ClientAuth:   auth,
			ClientCAs:    l.pool,
			NextProtos:   []string{"h2", "http/1.1"},
		}, nil
	}
	return base
}

// ClientConfig is the TLS configuration for dialing a peer whose
// certificate must have one of the roles want (any, when empty). Peers
// are checked by the CA and role, not by host name; this process's
// certificate goes along when it has one.
func (m *Material) ClientConfig(want ...Role) *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		CurvePreferences: clusterCurves,
		// The chain and role are checked in VerifyConnection against the
		// CA as it is now; host names play no part (see the package doc).
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := m.Verify(cs.PeerCertificates)
			if err != nil {
				return err
			}
			return checkRole(id, want)
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if c := m.cur.Load().cert; c != nil {
				return c, nil
			}
			return &tls.Certificate{}, nil
		},
	}
}

// Verify checks a peer's chain against the CA and returns the identity of
// its leaf.
func (m *Material) Verify(chain []*x509.Certificate) (Identity, error) {
	if len(chain) == 0 {
		return Identity{}, ErrNoCertificate
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: m.cur.Load().pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := chain[0].Verify(opts); err != nil {
		return Identity{}, fmt.Errorf("verify peer certificate %q: %w", chain[0].Subject.String(), err)
	}
	return IdentityOf(chain[0])
}

// PeerIdentity returns the identity of the certificate a TLS peer
// presented and the listener verified; ok is false for a connection that
// is not TLS or came without a certificate.
func PeerIdentity(cs *tls.ConnectionState) (id Identity, ok bool) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Identity{}, false
	}
	id, err := IdentityOf(cs.VerifiedChains[0][0])
	return id, err == nil
}

// CheckPeer returns an error unless the TLS peer of cs presented a
// verified certificate with one of the roles want.
func CheckPeer(cs *tls.ConnectionState, want ...Role) (Identity, error) {
	id, ok := PeerIdentity(cs)
	if !ok {
		return Identity{}, ErrNoCertificate
	}
	return id, checkRole(id, want)
}
