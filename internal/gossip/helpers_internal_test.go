package gossip

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client/pki"
)

// logRecorder is a slog.Handler that keeps every line at Info and above
// as "LEVEL message key=value ...", for tests to read.
type logRecorder struct {
	mu    *sync.Mutex // guards lines
	lines *[]string
	attrs []slog.Attr
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: new(sync.Mutex), lines: new([]string)}
}

func (r *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

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
	if os.Getenv("NETMGR_TEST_LOG") != "" {
		fmt.Fprintln(os.Stderr, b.String())
	}
	return nil
}

func (r *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(slices.Clone(r.attrs), as...)
	return &c
}

func (r *logRecorder) WithGroup(string) slog.Handler { return r }

// matching returns the lines that contain every one of subs.
func (r *logRecorder) matching(subs ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range *r.lines {
		if containsAll(subs...)(l) {
			out = append(out, l)
		}
	}
	return out
}

// containsAll returns a test of whether a line contains every one of
// subs.
func containsAll(subs ...string) func(line string) bool {
	return func(line string) bool {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				return false
			}
		}
		return true
	}
}

// clock is a settable clock for the refusal log. Safe for concurrent use.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// events is a memberlist.EventDelegate that keeps what it heard: the
// members that failed or left, and each member's latest metadata.
type events struct {
	mu   sync.Mutex // guards gone and meta
	gone []string
	meta map[string]string
}

var _ memberlist.EventDelegate = (*events)(nil)

func newEvents() *events { return &events{meta: make(map[string]string)} }

func (e *events) NotifyJoin(n *memberlist.Node) { e.set(n) }

func (e *events) NotifyUpdate(n *memberlist.Node) { e.set(n) }

func (e *events) NotifyLeave(n *memberlist.Node) {
	e.mu.Lock()
	e.gone = append(e.gone, n.Name)
	e.mu.Unlock()
}

func (e *events) set(n *memberlist.Node) {
	e.mu.Lock()
	e.meta[n.Name] = string(bytes.Clone(n.Meta))
	e.mu.Unlock()
}

// left returns the members reported failed or gone, in order.
func (e *events) left() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.gone)
}

// metaOf returns the latest metadata heard of member name.
func (e *events) metaOf(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.meta[name]
}

// testNode is a node of a test with what it logged and heard.
type testNode struct {
	*Node
	name    string
	keyring string // its keyring file; "" for none
	log     *logRecorder
	events  *events
	clock   *clock
}

// startNode starts a node named name on host (port 0) with a keyring
// file of keys (none when keys is empty), and stops it when the test
// ends.
func startNode(t *testing.T, name, host string, keys ...[]byte) *testNode {
	t.Helper()
	n := &testNode{name: name, log: newLogRecorder(), events: newEvents(), clock: &clock{t: time.Unix(1_000_000, 0)}}
	if len(keys) > 0 {
		n.keyring = writeKeyring(t, keys...)
	}
	var err error
	n.Node, err = newNode(Config{
		Name:    name,
		Addr:    host + ":0",
		Keyring: n.keyring,
		Meta:    []byte(name + "/0"),
		Events:  n.events,
		Logger:  slog.New(n.log),
	}, n.clock.now)
	if err != nil {
		t.Fatalf("start node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	return n
}

// writeKeyring writes a keyring file of keys and returns its path.
func writeKeyring(t *testing.T, keys ...[]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring")
	if err := pki.WriteKeyring(path, keys, false); err != nil {
		t.Fatal(err)
	}
	return path
}

// sees reports whether every node holds every other alive.
func sees(nodes ...*testNode) bool {
	for _, a := range nodes {
		m := a.Members()
		for _, b := range nodes {
			if !slices.Contains(m, b.name) {
				return false
			}
		}
	}
	return true
}
