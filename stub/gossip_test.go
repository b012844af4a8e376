package stub

import (
	"encoding/json"
	"github.com/netmgr/netmgr/internal/testwait"
	"io"
	"log"
	"slices"
	"strconv"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/netmgr/netmgr/client"
)

// serverMeta is the memberlist delegate of a bare node posing as a server.
type serverMeta []byte

func (m serverMeta) NodeMeta(int) []byte           { return m }
func (serverMeta) NotifyMsg([]byte)                {}
func (serverMeta) GetBroadcasts(int, int) [][]byte { return nil }
func (serverMeta) LocalState(bool) []byte          { return nil }
func (serverMeta) MergeRemoteState([]byte, bool)   {}

// newServerNode starts a memberlist node on 127.0.0.1 whose metadata says
// it is a server serving HTTP at httpAddr.
func newServerNode(t *testing.T, name, httpAddr string) *memberlist.Memberlist {
	t.Helper()
	return newServerNodeAt(t, name, httpAddr, 0)
}

// newServerNodeAt is newServerNode on gossip port port (0 picks one).
func newServerNodeAt(t *testing.T, name, httpAddr string, port int) *memberlist.Memberlist {
	t.Helper()
	meta, err := json.Marshal(client.NodeMeta{Role: client.RoleServer, HTTP: httpAddr})
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = name
	mc.BindAddr, mc.AdvertiseAddr, mc.BindPort = "127.0.0.1", "127.0.0.1", port
	mc.Delegate = serverMeta(meta)
	mc.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatalf("memberlist.Create: %v", err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	return ml
}

func gossipAddr(ml *memberlist.Memberlist) string {
	n := ml.LocalNode()
	return n.Addr.String() + ":" + strconv.Itoa(int(n.Port))
}

func TestGossipLearnsServers(t *testing.T) {
	srv := newFakeServer(t, 0)
	node := newServerNode(t, "srv1", srv.addr())

	s1 := newTestStub(t, Config{Name: "m1", Join: []string{gossipAddr(node)}})
	testwait.For(t, waitTimeout, "m1 to learn the server from gossip", func() bool {
		return slices.Contains(s1.servers.addrs(), srv.addr())
	})
	// A stub that joins through another stub learns it too.
	s2 := newTestStub(t, Config{Name: "m2", Join: []string{s1.gossip.addr}})
	testwait.For(t, waitTimeout, "m2 to learn the server from gossip", func() bool {
		return slices.Contains(s2.servers.addrs(), srv.addr())
	})

	// Events reach the server learned from gossip.
	req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/true"}
	mustStart(t, stubClient(t, s2), req)
	if evs := srv.waitTerm(t, keyOf(req)); len(evs) != 2 {
		t.Errorf("events = %+v, want REGISTER and TERM", evs)
	}

	// The server sees each stub's metadata.
	testwait.For(t, waitTimeout, "the server to see both stubs", func() bool {
		seen := 0
		for _, m := range node.Members() {
			var meta client.NodeMeta
			if json.Unmarshal(m.Meta, &meta) != nil || meta.Role != client.RoleStub {
				continue
			}
			if (m.Name == "m1" && meta.HTTP == s1.HTTPAddr()) || (m.Name == "m2" && meta.HTTP == s2.HTTPAddr()) {
				seen++
			}
		}
		return seen == 2
	})

	// A server that leaves is forgotten.
	if err := node.Leave(leaveTimeout); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	testwait.For(t, waitTimeout, "m1 to forget the server", func() bool { return len(s1.servers.addrs()) == 0 })
}

// TestGossipJoinsAgainWhenNoServerIsLeft takes the only server away and
// brings up a new one under its name and gossip address that knows no
// member, as a restarted server does. A stub that joined through another
// stub, which is gone too, has only the server's address from gossip to
// go on: it joins the new server by itself, learns its API address again,
// and the server sees it.
func TestGossipJoinsAgainWhenNoServerIsLeft(t *testing.T) {
	srv := newFakeServer(t, 0)
	node := newServerNode(t, "srv1", srv.addr())
	port := int(node.LocalNode().Port)

	s1 := newTestStub(t, Config{Name: "m1", Join: []string{gossipAddr(node)}})
	s2 := newTestStub(t, Config{Name: "m2", Join: []string{s1.gossip.addr}})
	testwait.For(t, waitTimeout, "m2 to learn the server from gossip", func() bool {
		return s2.gossip.liveServers() == 1 && slices.Contains(s2.servers.addrs(), srv.addr())
	})

	if err := s1.Shutdown(); err != nil {
		t.Fatalf("stop m1: %v", err)
	}
	if err := node.Leave(leaveTimeout); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if err := node.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	testwait.For(t, waitTimeout, "m2 to hold no server", func() bool {
		return s2.gossip.liveServers() == 0 && len(s2.servers.addrs()) == 0
	})

	back := newServerNodeAt(t, "srv1", srv.addr(), port)
	testwait.For(t, waitTimeout, "m2 to join the server again", func() bool {
		return s2.gossip.liveServers() == 1 && slices.Contains(s2.servers.addrs(), srv.addr())
	})
	testwait.For(t, waitTimeout, "the server to see m2", func() bool {
		for _, m := range back.Members() {
			if m.Name == "m2" {
				return true
			}
		}
		return false
	})
}

func TestSeenServers(t *testing.T) {
	type ev struct {
		node           string
		server, left   bool
		want           seenChange
		wantLive       int
		wantRemembered int
	}
	tests := []struct {
		name string
		evs  []ev
	}{
		{"a stub is not remembered", []ev{
			{node: "m2", want: seenSame},
		}},
		{"the last server failing, then one back", []ev{
			{node: "s1", server: true, want: seenSame, wantLive: 1, wantRemembered: 1},
			{node: "s2", server: true, want: seenSame, wantLive: 2, wantRemembered: 2},
			{node: "s1", left: true, want: seenSame, wantLive: 1, wantRemembered: 2},
			{node: "s2", left: true, want: lastServerGone, wantLive: 0, wantRemembered: 2},
			{node: "s2", left: true, want: seenSame, wantLive: 0, wantRemembered: 2},
			{node: "s1", server: true, want: serverBack, wantLive: 1, wantRemembered: 2},
			{node: "s2", server: true, want: seenSame, wantLive: 2, wantRemembered: 2},
		}},
		{"the first server is not back", []ev{
			{node: "s1", server: true, want: seenSame, wantLive: 1, wantRemembered: 1},
		}},
		{"a server that turns out a stub is forgotten", []ev{
			{node: "s1", server: true, want: seenSame, wantLive: 1, wantRemembered: 1},
			{node: "s1", want: lastServerGone, wantLive: 0, wantRemembered: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSeenServers()
			for i, e := range tt.evs {
				got := s.update(e.node, e.node+":7946", e.server, e.left)
				if got != e.want || s.live() != e.wantLive || len(s.addrs()) != e.wantRemembered {
					t.Errorf("event %d (%+v): got change %d, %d live, %d remembered; want %d, %d, %d",
						i, e, got, s.live(), len(s.addrs()), e.want, e.wantLive, e.wantRemembered)
				}
			}
		})
	}
}
