package server

import (
	"fmt"
	"github.com/netmgr/netmgr/internal/testwait"
	"log"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/slogadapt"
	"github.com/netmgr/netmgr/stub"
)

// keyPool is a gossip pool of in-process servers and stubs, each with a
// keyring file of its own, as on machines of their own.
type keyPool struct {
	t       *testing.T
	servers []*Server
	stubs   []*stub.Stub
	names   []string       // every member, servers first
	files   []string       // each member's keyring file, in names' order
	logs    []*logRecorder // each member's log, in names' order
}

// newKeyPool starts nServers servers (a Raft group on the in-memory
// transport) and nStubs stubs, all with the keyring keys.
func newKeyPool(t *testing.T, nServers, nStubs int, keys [][]byte) *keyPool {
	t.Helper()
	p := &keyPool{t: t}
	dir := t.TempDir()
	var trans []*raft.InmemTransport
	for range nServers {
		_, tr := raft.NewInmemTransport("")
		trans = append(trans, tr)
	}
	for i, a := range trans {
		for j, b := range trans {
			if i != j {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	member := func(name string) (string, *logRecorder) {
		file := filepath.Join(dir, name+".keyring")
		if err := pki.WriteKeyring(file, keys, false); err != nil {
			t.Fatal(err)
		}
		rec := newLogRecorder()
		p.names, p.files, p.logs = append(p.names, name), append(p.files, file), append(p.logs, rec)
		return file, rec
	}
	for i := range nServers {
		name := fmt.Sprintf("s%d", i)
		file, rec := member(name)
		cfg := Config{
			Name:            name,
			HTTPAddr:        "127.0.0.1:0",
			GossipAddr:      "127.0.0.1:0",
			BootstrapExpect: nServers,
			OutageGrace:     DefaultOutageGrace,
			Logger:          rec.logger(),
			GossipKeyring:   file,
			RaftTransport:   trans[i],
			InmemStore:      true,
		}
		if i > 0 {
			cfg.Join = []string{p.servers[0].GossipAddr()}
		}
		p.servers = append(p.servers, startServer(t, cfg))
	}
	for i := range nStubs {
		name := fmt.Sprintf("m%d", i)
		file, rec := member(name)
		p.stubs = append(p.stubs, startStub(t, name, p.servers[0].GossipAddr(), file, rec))
	}
	return p
}

// startStub starts a stub that joins the pool at join with the keyring
// file (none when empty) and stops it when the test ends.
func startStub(t *testing.T, name, join, keyring string, rec *logRecorder) *stub.Stub {
	t.Helper()
	dir := t.TempDir()
	st, err := stub.New(stub.Config{
		Name:          name,
		DataDir:       filepath.Join(dir, "data"),
		ExecDir:       filepath.Join(dir, "exec"),
		GossipAddr:    "127.0.0.1:0",
		Join:          []string{join},
		GossipKeyring: keyring,
		Logger:        rec.logger(),
	})
	if err != nil {
		t.Fatalf("start stub %s: %v", name, err)
	}
	t.Cleanup(func() { _ = st.Shutdown() })
	return st
}

// views returns each member's view of the pool, in names' order.
func (p *keyPool) views() [][]string {
	var out [][]string
	for _, s := range p.servers {
		out = append(out, s.GossipMembers())
	}
	for _, st := range p.stubs {
		out = append(out, st.GossipMembers())
	}
	return out
}

// whole reports whether every member sees every other.
func (p *keyPool) whole() bool {
	for _, v := range p.views() {
		for _, n := range p.names {
			if !slices.Contains(v, n) {
				return false
			}
		}
	}
	return true
}

// gossipAddrs returns each member's gossip address, in names' order.
func (p *keyPool) gossipAddrs() []string {
	var out []string
	for _, s := range p.servers {
		out = append(out, s.GossipAddr())
	}
	for _, st := range p.stubs {
		out = append(out, st.GossipAddr())
	}
	return out
}

// reloadAll writes keys to every member's keyring file and has each
// reload it, one after the other as an operator's loop over the machines
// would.
func (p *keyPool) reloadAll(keys [][]byte) {
	p.t.Helper()
	for _, f := range p.files {
		if err := pki.WriteKeyring(f, keys, true); err != nil {
			p.t.Fatal(err)
		}
	}
	for _, s := range p.servers {
		if err := s.Reload(); err != nil {
			p.t.Fatalf("reload %s: %v", s.Name(), err)
		}
	}
	for i, st := range p.stubs {
		if err := st.Reload(); err != nil {
			p.t.Fatalf("reload %s: %v", p.names[len(p.servers)+i], err)
		}
	}
}

// watch checks, every 10 ms until stop is closed, that every member sees
// every other and that no server's gossip has had a member fail; it
// returns what it found wrong.
func (p *keyPool) watch(stop <-chan struct{}) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var bad []string
		note := func(s string) {
			if len(bad) < 20 {
				bad = append(bad, s)
			}
		}
		for {
			select {
			case <-stop:
				out <- bad
				return
			case <-time.After(10 * time.Millisecond):
			}
			for i, v := range p.views() {
				for _, n := range p.names {
					if !slices.Contains(v, n) {
						note(fmt.Sprintf("%s: %s does not see %s", time.Now().Format(time.StampMilli), p.names[i], n))
					}
				}
			}
			for _, s := range p.servers {
				for name, m := range s.gossip.snapshot() {
					if slices.Contains(p.names, name) && !m.Alive {
						note(fmt.Sprintf("%s: %s saw %s fail", time.Now().Format(time.StampMilli), s.Name(), name))
					}
				}
			}
		}
	}()
	return out
}

// startProbe starts a bare memberlist node with keys (the first
// encrypting), which the test stops when it ends, and the recorder of
// what its memberlist logs.
func startProbe(t *testing.T, name string, keys ...[]byte) (*memberlist.Memberlist, *logRecorder) {
	t.Helper()
	ring, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder()
	mc := memberlist.DefaultLANConfig()
	mc.Name = name
	mc.BindAddr, mc.AdvertiseAddr, mc.BindPort = "127.0.0.1", "127.0.0.1", 0
	mc.Keyring = ring
	mc.Logger = log.New(slogadapt.Memberlist(rec.logger(), nil), "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatalf("start probe: %v", err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	return ml, rec
}

// probe starts a bare memberlist node with keys and has it join addr; it
// returns the join's error, after the node left again.
func probe(t *testing.T, name, addr string, keys ...[]byte) error {
	t.Helper()
	ml, _ := startProbe(t, name, keys...)
	defer func() { _ = ml.Shutdown() }()
	_, err := ml.Join([]string{addr})
	if err == nil {
		_ = ml.Leave(time.Second)
	}
	return err
}

// probe has a bare memberlist node with keys join the pool at addr and
// returns the join's error. A probe that gets in stays until every
// member sees it, leaves, and stops only once no member sees it: a
// member that had not heard of the leave when the probe stopped would
// ping a node that is gone and log it failed, and one that heard of the
// leave before the join drops the leave and takes the probe for alive.
// It fails the test if the probe could not read a member's gossip for
// want of the key.
func (p *keyPool) probe(name, addr string, keys ...[]byte) error {
	p.t.Helper()
	ml, rec := startProbe(p.t, name, keys...)
	if _, err := ml.Join([]string{addr}); err != nil {
		return err
	}
	sees := func(v []string) bool { return slices.Contains(v, name) }
	// A bound, not a wait: 20 s ran out once in a loaded CI run.
	testwait.For(p.t, time.Minute, "every member to see "+name, func() bool { return !slices.ContainsFunc(p.views(), func(v []string) bool { return !sees(v) }) })
	if err := ml.Leave(5 * time.Second); err != nil {
		p.t.Fatalf("%s leaves: %v", name, err)
	}
	// A bound, not a wait: 20 s ran out once in a loaded CI run (a leave
	// broadcast lost, the member found gone by probing instead).
	testwait.For(p.t, time.Minute, "no member to see "+name, func() bool { return !slices.ContainsFunc(p.views(), sees) })
	if err := ml.Shutdown(); err != nil {
		p.t.Fatalf("stop %s: %v", name, err)
	}
	if got := rec.matching("No installed keys could decrypt"); len(got) > 0 {
		p.t.Fatalf("%s, holding keys %v, could not read a member's gossip: %q", name, ids(keys), got)
	}
	return nil
}

// A pool rotates its gossip key from A to B in the three documented
// steps, each a change to every member's keyring file and a reload, and
// no member ever loses sight of another. Probes show each step took on
// every member: after "add", a node sending with B is read everywhere;
// after "use", a node holding only B can join anywhere (each member
// answers with B); after "remove", one holding only A is refused
// everywhere, and so is a stub with only A.
func TestGossipKeyRotationWithoutDowntime(t *testing.T) {
	a, b := pki.NewGossipKey(), pki.NewGossipKey()
	p := newKeyPool(t, 3, 2, [][]byte{a})
	testwait.For(t, time.Minute, "every member to see every other", p.whole) // a bound, not a wait: 20 s ran out once in a loaded CI run

	stop := make(chan struct{})
	found := p.watch(stop)
	steps := []struct {
		name  string
		keys  [][]byte
		probe [][]byte // the probe's keys
		join  bool     // whether the probe must get in
	}{
		{name: "add B", keys: [][]byte{a, b}, probe: [][]byte{b, a}, join: true},
		{name: "use B", keys: [][]byte{b, a}, probe: [][]byte{b}, join: true},
		{name: "remove A", keys: [][]byte{b}, probe: [][]byte{a}, join: false},
	}
	for i, step := range steps {
		p.reloadAll(step.keys)
		for j, addr := range p.gossipAddrs() {
			err := p.probe(fmt.Sprintf("probe-%d-%d", i, j), addr, step.probe...)
			if step.join && err != nil {
				t.Fatalf("%s: a probe with keys %v cannot join %s: %v", step.name, ids(step.probe), p.names[j], err)
			}
			if !step.join {
				if err == nil {
					t.Fatalf("%s: a probe with keys %v joined %s", step.name, ids(step.probe), p.names[j])
				}
				if _, ok := pki.GossipKeyProblem(err.Error()); !ok {
					t.Fatalf("%s: probe refused by %s for another reason: %v", step.name, p.names[j], err)
				}
			}
		}
		// Let the pool gossip and probe under the new keys for a few
		// probe intervals; the watcher checks every 10 ms meanwhile.
		deadline := time.Now().Add(3 * time.Second)
		testwait.For(t, 10*time.Second, step.name+": the pool whole after the step's window", func() bool {
			return time.Now().After(deadline) && p.whole()
		})
	}

	// A stub that holds only A no longer gets in.
	late := newLogRecorder()
	startStub(t, "late", p.servers[0].GossipAddr(), writeKeyring(t, a), late)
	testwait.For(t, 10*time.Second, "the stub with only A to log its refusal", func() bool {
		return len(late.matching("WARN gossip refused")) > 0
	})
	close(stop)
	if bad := <-found; len(bad) > 0 {
		t.Fatalf("during the rotation:\n%s", bad)
	}
	for i, v := range p.views() {
		if slices.Contains(v, "late") {
			t.Errorf("%s sees the stub with only key A", p.names[i])
		}
	}
	for i, rec := range p.logs {
		// The refused probe and stub are the only refusals: each member
		// refused the probe and says why.
		got := rec.matching("WARN gossip refused", "not in this member's keyring")
		if len(got) == 0 {
			t.Errorf("%s did not log refusing the probe with key A", p.names[i])
		}
		if n := len(rec.matching("gossip keyring reloaded", "primary_changed=true")); n != 1 {
			t.Errorf("%s logged %d reloads changing the primary, want 1", p.names[i], n)
		}
		// memberlist logs "Suspect X has failed, no acks received" and
		// "Marking X as failed": no member, nor probe, failed.
		if got := rec.matching("as failed"); len(got) > 0 {
			t.Errorf("%s declared members failed: %q", p.names[i], got)
		}
	}
}

// A process without the pool's key, or with another key, cannot join
// the pool, and both sides say why.
func TestGossipNeedsTheKey(t *testing.T) {
	key := pki.NewGossipKey()
	p := newKeyPool(t, 1, 1, [][]byte{key})
	testwait.For(t, time.Minute, "the pool to form", p.whole)
	server := p.servers[0].GossipAddr()

	for _, tt := range []struct {
		name, keyring, means string
	}{
		{name: "nokey", means: "has no gossip keyring"},
		{name: "otherkey", keyring: writeKeyring(t, pki.NewGossipKey()), means: "not in this member's keyring"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newLogRecorder()
			startStub(t, tt.name, server, tt.keyring, rec)
			testwait.For(t, 10*time.Second, "the stub to log why it cannot join", func() bool {
				return len(rec.matching("WARN gossip refused", tt.means)) > 0
			})
			// It keeps trying (every 0.5-4 s); watch a few of its tries.
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				for i, v := range p.views() {
					if slices.Contains(v, tt.name) {
						t.Fatalf("%s sees %s", p.names[i], tt.name)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	// The server logged a refusal, naming the problem (once a minute per
	// host, so the first of the two).
	if got := p.logs[0].matching("WARN gossip refused", "peer=127.0.0.1:", "hint="); len(got) == 0 {
		t.Fatalf("the server did not log refusing the stubs")
	}
}

// Reload keeps the keys in use when the file is bad, and says which.
func TestReloadRefusesABadKeyring(t *testing.T) {
	key := pki.NewGossipKey()
	p := newKeyPool(t, 1, 1, [][]byte{key})
	for _, f := range p.files {
		if err := writeRaw(f, "# emptied by mistake\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.servers[0].Reload(); err == nil {
		t.Fatal("server reloaded an empty keyring")
	}
	if err := p.stubs[0].Reload(); err == nil {
		t.Fatal("stub reloaded an empty keyring")
	}
	if got := p.servers[0].gossip.ml.Keys(); len(got) != 1 || !slices.Equal(got[0], key) {
		t.Fatal("the server's keyring changed")
	}
	if err := probe(t, "probe", p.stubs[0].GossipAddr(), key); err != nil {
		t.Fatalf("the stub no longer takes its key: %v", err)
	}
}

func writeKeyring(t *testing.T, keys ...[]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring")
	if err := pki.WriteKeyring(path, keys, false); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeRaw(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }

func ids(keys [][]byte) []string {
	var out []string
	for _, k := range keys {
		out = append(out, pki.KeyID(k))
	}
	return out
}
