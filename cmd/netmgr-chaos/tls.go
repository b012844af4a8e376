package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// chaosUser is the user the suite acts as, by its client certificate (or,
// with -insecure, by the header): every job it submits runs as this user,
// who is in the image's /etc/passwd. An ordinary user rather than root,
// because a secure cluster runs a job as root only when root submits it
// from a pool machine and the database allows root jobs; the jobs write
// only to the ledger, which the image makes writable by everyone.
const chaosUser = "chaos"

// tlsMountDir is where the TLS material is mounted, read-only, in every
// container.
const tlsMountDir = "/tls"

// keyringFile is the name of the gossip keyring in the TLS directory.
const keyringFile = "gossip.keyring"

// security is the TLS material of one run: a throw-away CA, a
// certificate per server and stub, the checker's client certificate and
// a gossip keyring. A nil *security is the insecure mode (-insecure).
type security struct {
	// dir holds the files on the host; it is mounted at tlsMountDir.
	dir   string
	files map[pki.Identity]pki.Files
	// checker is the client material the suite's own requests use.
	checker *pki.Material
}

// makeSecurity makes the run's CA, certificates and gossip keyring (one
// key) in dir/tls. The CA's key is removed once they are made: nothing
// else is ever issued, and the containers see only what they need.
func makeSecurity(dir string, t topology) (*security, error) {
	tlsDir, err := filepath.Abs(filepath.Join(dir, "tls"))
	if err != nil {
		return nil, fmt.Errorf("make TLS material: %w", err)
	}
	ids := []pki.Identity{{Role: pki.RoleClient, Name: chaosUser}}
	for _, s := range t.Servers {
		ids = append(ids, pki.Identity{Role: pki.RoleServer, Name: s.Name})
	}
	for _, s := range t.Stubs {
		ids = append(ids, pki.Identity{Role: pki.RoleStub, Name: s.Name})
	}
	// Long enough for any run, short enough that a kept directory's
	// certificates soon mean nothing.
	files, err := pki.MakeCluster(tlsDir, 7*24*time.Hour, ids...)
	if err != nil {
		return nil, fmt.Errorf("make TLS material: %w", err)
	}
	if err := os.Remove(filepath.Join(tlsDir, pki.CAKeyFile)); err != nil {
		return nil, fmt.Errorf("make TLS material: remove the CA key: %w", err)
	}
	if err := pki.WriteKeyring(filepath.Join(tlsDir, keyringFile), [][]byte{pki.NewGossipKey()}, false); err != nil {
		return nil, fmt.Errorf("make TLS material: %w", err)
	}
	checker, err := pki.Load(files[ids[0]])
	if err != nil {
		return nil, fmt.Errorf("make TLS material: %w", err)
	}
	return &security{dir: tlsDir, files: files, checker: checker}, nil
}

// flags returns the security flags of the server or stub id in its
// container: its files and the keyring under tlsMountDir, or --insecure
// for a nil s.
func (s *security) flags(id pki.Identity) ([]string, error) {
	if s == nil {
		return []string{"--insecure"}, nil
	}
	f, ok := s.files[id]
	if !ok {
		return nil, fmt.Errorf("no TLS material for %s", id)
	}
	in := func(path string) string { return tlsMountDir + "/" + filepath.Base(path) }
	return []string{"--ca-file=" + in(f.CA), "--cert-file=" + in(f.Cert), "--key-file=" + in(f.Key),
		"--gossip-keyring=" + tlsMountDir + "/" + keyringFile}, nil
}
