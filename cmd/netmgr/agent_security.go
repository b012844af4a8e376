package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// devSecurity is the dev agent's throw-away security material.
type devSecurity struct {
	ca       string        // the CA certificate file, for NETMGR_CACERT
	server   *pki.Material // dev-server's certificate
	stub     *pki.Material // dev-stub's certificate
	keyring  string        // the gossip keyring file
	socket   string        // the stub's socket, for NETMGR_SOCKET
	database string        // a database that allows root jobs
}

// devDatabase lets root run jobs as root, so that the demo works when it
// is run as root; other users run as themselves.
const devDatabase = "/* netmgr agent --dev */\nallow_root_jobs\n"

// makeDevSecurity makes, under dir, a CA with certificates for the dev
// server and stub, a gossip keyring and the dev database.
func makeDevSecurity(dir string) (devSecurity, error) {
	tlsDir := filepath.Join(dir, "tls")
	srvID := pki.Identity{Role: pki.RoleServer, Name: devServerName}
	stubID := pki.Identity{Role: pki.RoleStub, Name: devStubName}
	files, err := pki.MakeCluster(tlsDir, 30*24*time.Hour, srvID, stubID)
	if err != nil {
		return devSecurity{}, fmt.Errorf("dev agent: %w", err)
	}
	sec := devSecurity{
		ca:       files[srvID].CA,
		keyring:  filepath.Join(tlsDir, "gossip.keyring"),
		socket:   filepath.Join(dir, "stub.sock"),
		database: filepath.Join(dir, "dev.db"),
	}
	if sec.server, err = pki.Load(files[srvID]); err != nil {
		return devSecurity{}, err
	}
	if sec.stub, err = pki.Load(files[stubID]); err != nil {
		return devSecurity{}, err
	}
	if err := pki.WriteKeyring(sec.keyring, [][]byte{pki.NewGossipKey()}, false); err != nil {
		return devSecurity{}, err
	}
	if err := os.WriteFile(sec.database, []byte(devDatabase), 0o644); err != nil {
		return devSecurity{}, fmt.Errorf("write dev database: %w", err)
	}
	return sec, nil
}
