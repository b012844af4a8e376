package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
)

// logRecorder is a slog.Handler that keeps every record as one line of
// text ("WARN msg k=v ..."), so tests can look for a refusal in a
// server's log. It also writes to stderr when NETMGR_TEST_LOG is set.
type logRecorder struct {
	mu    *sync.Mutex // guards lines
	lines *[]string
	attrs []slog.Attr
	echo  bool
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: new(sync.Mutex), lines: new([]string), echo: os.Getenv("NETMGR_TEST_LOG") != ""}
}

// Enabled keeps Info and above, and Debug too when echoing: Raft's debug
// lines then come here too (raftLogger).
func (r *logRecorder) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || r.echo
}

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	for _, a := range r.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	*r.lines = append(*r.lines, b.String())
	r.mu.Unlock()
	if r.echo {
		fmt.Fprintln(os.Stderr, b.String())
	}
	return nil
}

func (r *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(append([]slog.Attr{}, r.attrs...), as...)
	return &c
}

func (r *logRecorder) WithGroup(string) slog.Handler { return r }

// logger returns a logger writing to r.
func (r *logRecorder) logger() *slog.Logger { return slog.New(r) }

// matching returns the lines that contain every one of subs.
func (r *logRecorder) matching(subs ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range *r.lines {
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

// tlsServerConfig is the configuration of an in-process server on the
// production Raft path over TLS (TCP on loopback, in-memory stores to
// spare the disk), with its log kept by rec.
func tlsServerConfig(name string, m *pki.Material, rec *logRecorder) Config {
	return Config{
		Name:        name,
		HTTPAddr:    "127.0.0.1:0",
		RaftAddr:    "127.0.0.1:0",
		GossipAddr:  "127.0.0.1:0",
		InmemStore:  true,
		OutageGrace: DefaultOutageGrace,
		Logger:      rec.logger(),
		TLS:         m,
	}
}

// startServer starts a server and stops it when the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("start server %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// raftServers returns the IDs in s's Raft configuration.
func raftServers(t *testing.T, s *Server) []string {
	t.Helper()
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatalf("read raft configuration of %s: %v", s.Name(), err)
	}
	var out []string
	for _, srv := range f.Configuration().Servers {
		out = append(out, string(srv.ID))
	}
	return out
}

// waitLeader waits until exactly one of ss leads and returns it.
func waitLeader(t *testing.T, ss []*Server) *Server {
	t.Helper()
	var leader *Server
	testwait.For(t, 15*time.Second, "one leader", func() bool {
		leader = nil
		for _, s := range ss {
			if s.raft.State() != raft.Leader {
				continue
			}
			if leader != nil {
				return false
			}
			leader = s
		}
		return leader != nil
	})
	return leader
}

// writeFile writes text to a new file in a temp dir and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
