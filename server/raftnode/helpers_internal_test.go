package raftnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// logRecorder is a slog.Handler that keeps every record as one line of
// text ("WARN msg k=v ..."), so tests can look for a refusal in the log.
type logRecorder struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

// WithAttrs drops the attributes: the tests here add none they look for.
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// logger returns a logger writing to r.
func (r *logRecorder) logger() *slog.Logger { return slog.New(r) }

// matching returns the lines that contain every one of subs.
func (r *logRecorder) matching(subs ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// tlsPKI is a throw-away cluster CA with certificates for tests.
type tlsPKI struct {
	t     *testing.T
	files map[pki.Identity]pki.Files
}

// newTLSPKI makes a CA and a certificate for each of ids.
func newTLSPKI(t *testing.T, ids ...pki.Identity) *tlsPKI {
	t.Helper()
	files, err := pki.MakeCluster(t.TempDir(), time.Hour, ids...)
	if err != nil {
		t.Fatalf("make cluster TLS material: %v", err)
	}
	return &tlsPKI{t: t, files: files}
}

// material loads the material of id.
func (p *tlsPKI) material(id pki.Identity) *pki.Material {
	p.t.Helper()
	f, ok := p.files[id]
	if !ok {
		p.t.Fatalf("no certificate made for %v", id)
	}
	m, err := pki.Load(f)
	if err != nil {
		p.t.Fatalf("load TLS material of %v: %v", id, err)
	}
	return m
}

func serverID(name string) pki.Identity { return pki.Identity{Role: pki.RoleServer, Name: name} }
func stubID(name string) pki.Identity   { return pki.Identity{Role: pki.RoleStub, Name: name} }

// stubListener listens with the stub m1's certificate of p, as a rogue
// holding a stolen one would at its Raft address, until the test ends;
// it returns the address.
func stubListener(t *testing.T, p *tlsPKI) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.material(stubID("m1")).ServerConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}
