package server

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"github.com/netmgr/netmgr/internal/testwait"
	"io"
	"log"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/server/raftnode"
)

// rogueMeta is the memberlist delegate of a bare node gossiping that it
// is a server.
type rogueMeta []byte

func (m rogueMeta) NodeMeta(int) []byte           { return m }
func (rogueMeta) NotifyMsg([]byte)                {}
func (rogueMeta) GetBroadcasts(int, int) [][]byte { return nil }
func (rogueMeta) LocalState(bool) []byte          { return nil }
func (rogueMeta) MergeRemoteState([]byte, bool)   {}

// rogueServer starts a bare memberlist node named name, holding the
// gossip key, that gossips the server role with raftAddr as its Raft
// address and expect as its --bootstrap-expect, and joins join.
func rogueServer(t *testing.T, name, raftAddr string, expect int, join string, key []byte) {
	t.Helper()
	meta, err := json.Marshal(client.NodeMeta{Role: client.RoleServer, HTTP: "127.0.0.1:1", Raft: raftAddr, Expect: expect, Level: 1})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := memberlist.NewKeyring(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = name
	mc.BindAddr, mc.AdvertiseAddr, mc.BindPort = "127.0.0.1", "127.0.0.1", 0
	mc.Keyring = ring
	mc.Delegate = rogueMeta(meta)
	mc.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatalf("start rogue %s: %v", name, err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	if _, err := ml.Join([]string{join}); err != nil {
		t.Fatalf("rogue %s joins gossip: %v", name, err)
	}
}

// stubCertListener listens with a stub's certificate, as a rogue server
// holding a stolen one would at its Raft address.
func stubCertListener(t *testing.T, p *tlsPKI) net.Listener {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.material(stubID("m1")).ServerConfig(false))
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
	return ln
}

// Only a member that proves with a server certificate of the cluster CA
// that it is the server it gossips joins the Raft group. Three would-be
// servers that hold the gossip key and gossip the server role are
// refused, pass after pass: one whose Raft address presents a stub's
// certificate, a real server started without TLS (--insecure), and one
// that names another server's Raft address as its own. A fourth server
// with its own certificate is added.
func TestOnlyServerCertificatesJoinRaft(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"), serverID("s1"), serverID("s2"), serverID("s3"), stubID("m1"))
	keyring := writeKeyring(t, pki.NewGossipKey())
	key, err := pki.ReadKeyring(keyring)
	if err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder()
	var ss []*Server
	for i := range 3 {
		name := fmt.Sprintf("s%d", i)
		cfg := tlsServerConfig(name, p.material(serverID(name)), rec)
		cfg.BootstrapExpect, cfg.GossipKeyring = 3, keyring
		if i > 0 {
			cfg.Join = []string{ss[0].GossipAddr()}
		}
		ss = append(ss, startServer(t, cfg))
	}
	waitLeader(t, ss)
	join := ss[0].GossipAddr()

	// A stolen stub certificate behind a Raft address.
	stubLn := stubCertListener(t, p)
	rogueServer(t, "rogue-stub-cert", stubLn.Addr().String(), 0, join, key[0])
	// Another server's Raft address under a new name.
	rogueServer(t, "rogue-impostor", ss[1].RaftAddr(), 0, join, key[0])
	// A real server without TLS.
	insecure := tlsServerConfig("rogue-insecure", nil, newLogRecorder())
	insecure.TLS, insecure.GossipKeyring, insecure.Join = nil, keyring, []string{join}
	startServer(t, insecure)
	// A real server with its own certificate, joining the running group.
	good := tlsServerConfig("s3", p.material(serverID("s3")), rec)
	good.GossipKeyring, good.Join = keyring, []string{join}
	ss = append(ss, startServer(t, good))

	rogues := []struct{ name, why string }{
		{"rogue-stub-cert", "wrong certificate role"},
		{"rogue-impostor", "answers as server s1, not as server rogue-impostor"},
		{"rogue-insecure", "dial raft at"},
	}
	leader := waitLeader(t, ss)
	testwait.For(t, 15*time.Second, "the leader's gossip to see every would-be server", func() bool {
		servers := leader.gossip.servers()
		for _, r := range rogues {
			if _, ok := servers[r.name]; !ok {
				return false
			}
		}
		return true
	})
	testwait.For(t, 15*time.Second, "s3 in the raft configuration", func() bool {
		return slices.Contains(raftServers(t, leader), "s3")
	})

	// Watch the configuration while the leader checks each would-be
	// server again and again (every raftnode.AdmitRetry, on passes every
	// leaderTick): at least three refusals of each.
	start := leader.admission.Refused()
	deadline := time.Now().Add(3*raftnode.AdmitRetry + time.Second)
	for time.Now().Before(deadline) || leader.admission.Refused()-start < int64(3*len(rogues)) {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("the leader refused %d times in the window, want at least %d", leader.admission.Refused()-start, 3*len(rogues))
		}
		got := raftServers(t, leader)
		slices.Sort(got)
		if want := []string{"s0", "s1", "s2", "s3"}; !slices.Equal(got, want) {
			t.Fatalf("got raft configuration %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Each refusal is counted in /metrics.
	if got, want := leader.metrics.deniedRequests.WithLabelValues(denyRogueServer).Value(), float64(leader.admission.Refused()); got < want {
		t.Errorf("netmgr_requests_denied_total{reason=%q} = %v, want at least the %v refusals", denyRogueServer, got, want)
	}
	for _, r := range rogues {
		got := rec.matching("WARN refused to add server "+r.name+": ", r.why, "server="+leader.Name())
		if len(got) != 1 {
			t.Errorf("%s: got %d refusal lines from the leader, want 1 (once a minute) naming %q; lines: %q",
				r.name, len(got), r.why, rec.matching("refused to add server "+r.name))
		}
	}
}

// Servers forming a group count only would-be servers that prove
// themselves: with two servers expecting three and a rogue gossiping
// the server role and the same expectation, none bootstraps; the third
// server's arrival forms the group of the three.
func TestBootstrapCountsOnlyServerCertificates(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"), serverID("s1"), serverID("s2"), stubID("m1"))
	keyring := writeKeyring(t, pki.NewGossipKey())
	key, err := pki.ReadKeyring(keyring)
	if err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder()
	start := func(name string, join []string) *Server {
		cfg := tlsServerConfig(name, p.material(serverID(name)), rec)
		cfg.BootstrapExpect, cfg.GossipKeyring, cfg.Join = 3, keyring, join
		return startServer(t, cfg)
	}
	s0 := start("s0", nil)
	s1 := start("s1", []string{s0.GossipAddr()})
	rogueServer(t, "rogue", stubCertListener(t, p).Addr().String(), 3, s0.GossipAddr(), key[0])
	testwait.For(t, 15*time.Second, "both servers to refuse the rogue", func() bool {
		return len(rec.matching("WARN refused to add server rogue: ", "wrong certificate role", "server=s0")) == 1 &&
			len(rec.matching("WARN refused to add server rogue: ", "wrong certificate role", "server=s1")) == 1
	})
	// Several bootstrap attempts (every 200 ms) see three would-be
	// servers; none forms a group.
	refused := s0.admission.Refused() + s1.admission.Refused()
	testwait.For(t, 15*time.Second, "more refusals", func() bool {
		if got := s0.admission.Refused() + s1.admission.Refused(); got < refused+4 {
			return false
		}
		return true
	})
	for _, s := range []*Server{s0, s1} {
		if got := raftServers(t, s); len(got) != 0 {
			t.Fatalf("%s bootstrapped with %v", s.Name(), got)
		}
	}
	s2 := start("s2", []string{s0.GossipAddr()})
	leader := waitLeader(t, []*Server{s0, s1, s2})
	got := raftServers(t, leader)
	slices.Sort(got)
	if want := []string{"s0", "s1", "s2"}; !slices.Equal(got, want) {
		t.Fatalf("got raft configuration %v, want %v", got, want)
	}
}
