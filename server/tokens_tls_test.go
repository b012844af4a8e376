package server_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestBearerTokenOverTLS runs a TLS server: an admin with a client
// certificate issues tokens, and a client with no certificate acts as the
// token's user; a forged, expired or revoked token and no token at all
// are refused with 401.
func TestBearerTokenOverTLS(t *testing.T) {
	t.Parallel()
	s, certs, load := tlsServerWithAdmin(t)
	srvID, adminID := tlsServerID, tlsAdminID

	caOnly := load(pki.Files{CA: certs[srvID].CA})
	newClient := func(opts ...client.Option) *client.Client {
		cl, err := client.New([]string{s.HTTPAddr()}, append([]client.Option{client.WithRetryFor(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		return cl
	}
	admin := newClient(client.WithTLS(load(certs[adminID])))
	testwait.For(t, 10*time.Second, "the --database file loaded", func() bool {
		db, err := admin.Database(ctx(t))
		return err == nil && strings.Contains(db.Text, "admin_id tclark")
	})
	tok, err := admin.CreateToken(ctx(t), client.TokenRequest{User: "alice", TTLMS: time.Hour.Milliseconds()})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	short, err := admin.CreateToken(ctx(t), client.TokenRequest{User: "alice", TTLMS: 1})
	if err != nil {
		t.Fatalf("create short token: %v", err)
	}

	alice := newClient(client.WithTLS(caOnly), client.WithToken(tok.Token))
	job, err := alice.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, Min: 1}})
	if err != nil {
		t.Fatalf("submit with the token: %v", err)
	}
	got, err := alice.Job(ctx(t), job.Name)
	if err != nil || got.Owner != "alice" {
		t.Fatalf("job submitted with alice's token: got %+v, %v; want it owned by alice", got, err)
	}
	_, err = alice.Tokens(ctx(t))
	wantAPIError(t, err, http.StatusForbidden, "alice (token "+tok.ID+") is neither an admin_id")

	forged := []byte(tok.Token) // another well-formed secret for the ID
	if forged[30] == 'A' {
		forged[30] = 'B'
	} else {
		forged[30] = 'A'
	}
	refusals := []struct {
		name string
		opts []client.Option
		want string
	}{
		{"no token", nil, "no client certificate or token"},
		{"forged", []client.Option{client.WithToken(string(forged))}, "unknown or revoked token " + tok.ID},
		{"malformed", []client.Option{client.WithToken("hunter2")}, "malformed token"},
		{"expired", []client.Option{client.WithToken(short.Token)}, "expired token: token " + short.ID + " expired at"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			cl := newClient(append([]client.Option{client.WithTLS(caOnly)}, tt.opts...)...)
			_, err := cl.Jobs(ctx(t))
			wantAPIError(t, err, http.StatusUnauthorized, tt.want)
		})
	}

	if err := admin.RevokeToken(ctx(t), tok.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	_, err = alice.Jobs(ctx(t))
	wantAPIError(t, err, http.StatusUnauthorized, "unknown or revoked token "+tok.ID)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || strings.Contains(apiErr.Message, tok.Token[13:]) {
		t.Errorf("refusal %q shows the token's secret", err)
	}
}

// The identities of tlsServerWithAdmin's certificates.
var (
	tlsServerID = pki.Identity{Role: pki.RoleServer, Name: "s0"}
	tlsAdminID  = pki.Identity{Role: pki.RoleClient, Name: "tclark"}
)

// tlsServerWithAdmin starts one TLS server, s0, whose database makes
// tclark (a client certificate) an admin_id. It returns the server, the
// certificate files by identity, and a loader of TLS material that fails
// the test on error.
func tlsServerWithAdmin(t *testing.T) (*server.Server, map[pki.Identity]pki.Files, func(pki.Files) *pki.Material) {
	t.Helper()
	dir := t.TempDir()
	certs, err := pki.MakeCluster(dir, time.Hour, tlsServerID, tlsAdminID)
	if err != nil {
		t.Fatalf("make certificates: %v", err)
	}
	load := func(f pki.Files) *pki.Material {
		m, err := pki.Load(f)
		if err != nil {
			t.Fatalf("load TLS material: %v", err)
		}
		return m
	}
	dbFile := filepath.Join(dir, "site.db")
	if err := os.WriteFile(dbFile, []byte("admin_id tclark\n"), 0o644); err != nil {
		t.Fatalf("write database: %v", err)
	}
	_, tr := raft.NewInmemTransport("")
	s, err := server.New(server.Config{
		Name: "s0", HTTPAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", BootstrapExpect: 1,
		DatabaseFile: dbFile, TLS: load(certs[tlsServerID]), Logger: servertest.Logger(),
		RaftTransport: tr, InmemStore: true, TuneRaft: servertest.FastRaft,
	})
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s, certs, load
}
