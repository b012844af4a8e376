package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names in a CA directory and of issued certificates.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// DefaultCAValidity and DefaultCertValidity are how long a CA and a
// certificate made without an explicit validity last.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
)

// ErrExists means a file that would be written already exists; nothing is
// overwritten.
var ErrExists = errors.New("file exists")

// CA is a cluster certificate authority: its certificate and its key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// NewCA makes a CA for a cluster, valid for validity from now.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{organization}, CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// WriteCA writes the CA's certificate and key into dir as ca.pem and
// ca-key.pem (mode 0600); it refuses to overwrite either.
func (ca *CA) Write(dir string) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return fmt.Errorf("encode CA key: %w", err)
	}
	return writeFiles(dir, map[string][]byte{
		CAFile:    ca.CertPEM,
		CAKeyFile: pemBlock("PRIVATE KEY", keyDER),
	}, []string{CAKeyFile})
}

// LoadCA reads a CA written by Write from dir.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("load CA key: %w (only the CA directory holds it; make certificates where it is)", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("load CA %s: %w", filepath.Join(dir, CAFile), err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("load CA key %s: no PEM block", filepath.Join(dir, CAKeyFile))
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA key %s: %w", filepath.Join(dir, CAKeyFile), err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, fmt.Errorf("load CA %s: not a CA certificate and key", dir)
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: signer}, nil
}

// Issued is a certificate and its key, PEM-encoded.
type Issued struct {
	ID      Identity
	CertPEM []byte
	KeyPEM  []byte
}

// Issue makes a certificate for id, valid for validity from now. Server
// and stub certificates also serve TLS: hosts (DNS names or IP addresses)
// go into them, with localhost, 127.0.0.1 and ::1, so that curl and
// openssl can check the host name too.
func (ca *CA) Issue(id Identity, hosts []string, validity time.Duration) (Issued, error) {
	if _, err := ParseRole(string(id.Role)); err != nil {
		return Issued{}, fmt.Errorf("issue certificate: %w", err)
	}
	if id.Name == "" {
		return Issued{}, fmt.Errorf("issue %s certificate: no name", id.Role)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, fmt.Errorf("issue certificate for %s: make key: %w", id, err)
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject: pkix.Name{
			Organization:       []string{organization},
			OrganizationalUnit: []string{string(id.Role)},
			CommonName:         id.Name,
		},
		NotBefore:   now.Add(-time.Minute),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if id.Role != RoleClient {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, hosts...) {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if h != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return Issued{}, fmt.Errorf("issue certificate for %s: %w", id, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, fmt.Errorf("issue certificate for %s: encode key: %w", id, err)
	}
	return Issued{ID: id, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

// FileNames are the names Write gives an issued certificate and key:
// ROLE-NAME.pem and ROLE-NAME-key.pem.
func (is Issued) FileNames() (cert, key string) {
	base := string(is.ID.Role) + "-" + is.ID.Name
	return base + ".pem", base + "-key.pem"
}

// Write writes the certificate and key into dir (the key with mode 0600)
// and returns their paths; it refuses to overwrite either.
func (is Issued) Write(dir string) (Files, error) {
	certName, keyName := is.FileNames()
	err := writeFiles(dir, map[string][]byte{certName: is.CertPEM, keyName: is.KeyPEM}, []string{keyName})
	if err != nil {
		return Files{}, err
	}
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, certName), Key: filepath.Join(dir, keyName)}, nil
}

// writeFiles writes each named file into dir, none of which may exist;
// the names in secret get mode 0600, the others 0644.
func writeFiles(dir string, files map[string][]byte, secret []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make directory %s: %w", dir, err)
	}
	for name := range files {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("write %s: %w; move it away first", filepath.Join(dir, name), ErrExists)
		}
	}
	for name, data := range files {
		mode := os.FileMode(0o644)
		for _, s := range secret {
			if s == name {
				mode = 0o600
			}
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, mode); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// parseCert reads the first certificate of a PEM file.
func parseCert(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no certificate in PEM data")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// serial returns a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(fmt.Sprintf("pki: read random serial: %v", err)) // crypto/rand does not fail on Linux
	}
	return n
}
