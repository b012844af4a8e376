package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// A server or stub with certificates but no gossip keyring refuses to
// start, saying how to make one: its gossip would be in the clear, and
// whoever reaches the port could claim machines dead or alive.
func TestTLSWithoutGossipKeyringIsRefused(t *testing.T) {
	dir := t.TempDir()
	files, err := pki.MakeCluster(dir, time.Hour,
		pki.Identity{Role: pki.RoleServer, Name: "s0"}, pki.Identity{Role: pki.RoleStub, Name: "m0"})
	if err != nil {
		t.Fatal(err)
	}
	tlsArgs := func(role pki.Role, name string) []string {
		f := files[pki.Identity{Role: role, Name: name}]
		return []string{"--ca-file", f.CA, "--cert-file", f.Cert, "--key-file", f.Key}
	}
	tests := []struct {
		name string
		args []string
	}{
		{"server", append([]string{"netmgr", "server", "--name", "s0", "--data-dir", filepath.Join(dir, "s0")}, tlsArgs(pki.RoleServer, "s0")...)},
		{"stub", append([]string{"netmgr", "stub", "--name", "m0", "--data-dir", filepath.Join(dir, "m0"), "--join", "127.0.0.1:1"}, tlsArgs(pki.RoleStub, "m0")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			want := "netmgr " + tt.name + ": no gossip keyring: give --gossip-keyring FILE (make it once with `netmgr tls gossip-key create FILE`"
			if code != exitUsage || !strings.HasPrefix(stderr, want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and prefix\n%s", code, stderr, exitUsage, want)
			}
		})
	}
}
