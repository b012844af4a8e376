package pki_test

import (
	"context"
	"crypto/tls"
	"errors"

	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

var (
	srvID    = pki.Identity{Role: pki.RoleServer, Name: "s1"}
	stubID   = pki.Identity{Role: pki.RoleStub, Name: "flute"}
	clientID = pki.Identity{Role: pki.RoleClient, Name: "alice"}
)

func cluster(t *testing.T) map[pki.Identity]pki.Files {
	t.Helper()
	files, err := pki.MakeCluster(t.TempDir(), time.Hour, srvID, stubID, clientID)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func load(t *testing.T, f pki.Files) *pki.Material {
	t.Helper()
	m, err := pki.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dial makes one TLS connection from cm to a listener of sm and returns
// the identity the listener saw and the dial error.
func dial(t *testing.T, sm, cm *pki.Material, require bool, want ...pki.Role) (pki.Identity, bool, error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sm.ServerConfig(require))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type seen struct {
		id pki.Identity
		ok bool
	}
	got := make(chan seen, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- seen{}
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if tc.HandshakeContext(context.Background()) != nil {
			got <- seen{}
			return
		}
		cs := tc.ConnectionState()
		id, ok := pki.PeerIdentity(&cs)
		got <- seen{id, ok}
		_, _ = c.Write([]byte{1})
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cm.ClientConfig(want...))
	if err == nil {
		// A TLS 1.3 client learns of a refused certificate on its first read.
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	s := <-got
	return s.id, s.ok, err
}

func TestRolesAndNames(t *testing.T) {
	f := cluster(t)
	srv, st, cl := load(t, f[srvID]), load(t, f[stubID]), load(t, f[clientID])
	if srv.Self() != srvID || st.Self() != stubID || cl.Self() != clientID {
		t.Fatalf("identities %v %v %v", srv.Self(), st.Self(), cl.Self())
	}
	id, ok, err := dial(t, st, srv, true, pki.RoleStub)
	if err != nil || !ok || id != srvID {
		t.Fatalf("server to stub: id %v ok %v err %v", id, ok, err)
	}
	// A client certificate cannot pose as a stub when a server dials.
	if _, _, err := dial(t, cl, srv, true, pki.RoleStub); !errors.Is(err, pki.ErrWrongRole) {
		t.Fatalf("dial a client-cert listener wanting a stub: err %v, want ErrWrongRole", err)
	}
}

func TestNoCertificateRefusedWhereRequired(t *testing.T) {
	f := cluster(t)
	srv := load(t, f[srvID])
	anon := load(t, pki.Files{CA: f[srvID].CA})
	if _, _, err := dial(t, srv, anon, true); err == nil {
		t.Fatal("a client without a certificate got through a listener that requires one")
	}
	if _, ok, err := dial(t, srv, anon, false); err != nil || ok {
		t.Fatalf("optional client cert: ok %v err %v, want a connection without identity", ok, err)
	}
}

func TestForeignCARefused(t *testing.T) {
	mine, theirs := cluster(t), cluster(t)
	srv := load(t, mine[srvID])
	rogue := load(t, theirs[srvID])
	if _, _, err := dial(t, srv, rogue, false); err == nil {
		t.Fatal("a server of another CA was accepted")
	}
}

func TestReloadTakesNewCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	is, err := ca.Issue(stubID, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	files, err := is.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := load(t, files)
	first := m.NotAfter()
	if _, err := is.Write(dir); !errors.Is(err, pki.ErrExists) {
		t.Fatalf("second write: %v, want ErrExists", err)
	}
	is2, err := ca.Issue(stubID, nil, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	f2, err := is2.Write(other)
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, f2.Cert, files.Cert)
	copyFile(t, f2.Key, files.Key)
	if err := m.Reload(); err != nil {
		t.Fatal(err)
	}
	if !m.NotAfter().After(first) {
		t.Fatalf("reload kept the old certificate (expires %v, first %v)", m.NotAfter(), first)
	}
}

func TestOpenSSLShowsRole(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed; the subject check needs it")
	}
	f := cluster(t)
	out, err := exec.Command(openssl, "x509", "-noout", "-subject", "-in", f[stubID].Cert).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "OU = stub") && !strings.Contains(string(out), "OU=stub") {
		t.Fatalf("openssl subject %q does not name the role", out)
	}
	if !strings.Contains(string(out), "CN = flute") && !strings.Contains(string(out), "CN=flute") {
		t.Fatalf("openssl subject %q does not name the machine", out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
