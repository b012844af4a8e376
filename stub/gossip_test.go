package stub

import (
	"encoding/json"
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
	meta, err := json.Marshal(client.NodeMeta{Role: client.RoleServer, HTTP: httpAddr})
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = name
	mc.BindAddr, mc.AdvertiseAddr, mc.BindPort = "127.0.0.1", "127.0.0.1", 0
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
	waitFor(t, "m1 to learn the server from gossip", func() bool {
		return slices.Contains(s1.servers.addrs(), srv.addr())
	})
	// A stub that joins through another stub learns it too.
	s2 := newTestStub(t, Config{Name: "m2", Join: []string{gossipAddr(s1.gossip.ml)}})
	waitFor(t, "m2 to learn the server from gossip", func() bool {
		return slices.Contains(s2.servers.addrs(), srv.addr())
	})

	// Events reach the server learned from gossip.
	req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/true"}
	mustStart(t, stubClient(t, s2), req)
	if evs := srv.waitTerm(t, keyOf(req)); len(evs) != 2 {
		t.Errorf("events = %+v, want REGISTER and TERM", evs)
	}

	// The server sees each stub's metadata.
	waitFor(t, "the server to see both stubs", func() bool {
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
	waitFor(t, "m1 to forget the server", func() bool { return len(s1.servers.addrs()) == 0 })
}
