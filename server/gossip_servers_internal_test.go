package server

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client"
)

// The gossip view keeps its servers apart from the rest of the pool, so
// that forwarding a request finds the leader without copying every
// member: servers() and serverMembers() follow each member's latest
// metadata (a role that changes, a server that dies) and name no stub.
func TestGossipKeepsItsServersApart(t *testing.T) {
	g := &gossip{members: make(map[string]*member), serverIdx: make(map[string]*member), events: make(chan struct{}, 1)}
	node := func(name, role string) *memberlist.Node {
		meta, err := json.Marshal(client.NodeMeta{Role: role, HTTP: name + ":1"})
		if err != nil {
			t.Fatal(err)
		}
		return &memberlist.Node{Name: name, Meta: meta}
	}
	names := func(m map[string]client.NodeMeta) []string { return slices.Sorted(maps.Keys(m)) }
	g.NotifyJoin(node("s1", client.RoleServer))
	g.NotifyJoin(node("s2", client.RoleServer))
	for i := range 100 {
		g.NotifyJoin(node("m"+string(rune('a'+i%26))+string(rune('a'+i/26)), client.RoleStub))
	}
	if got := names(g.servers()); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Fatalf("servers() = %v, want [s1 s2]", got)
	}
	g.NotifyLeave(node("s2", client.RoleServer))
	if got := names(g.servers()); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("after s2 died, servers() = %v, want [s1]", got)
	}
	if m, ok := g.serverMembers()["s2"]; !ok || m.Alive {
		t.Errorf("serverMembers() has s2 %+v, %v; want it, dead (its level still counts)", m, ok)
	}
	g.NotifyUpdate(node("s1", client.RoleStub))
	if got := names(g.servers()); len(got) != 0 {
		t.Errorf("after s1 gossiped a stub's role, servers() = %v, want none", got)
	}
	if len(g.serverMembers()) != 1 {
		t.Errorf("serverMembers() = %v, want s2 alone", g.serverMembers())
	}

	// servers() answers while the view's lock is held, as memberlist's
	// callbacks hold it: a forwarded request never queues behind them.
	g.NotifyJoin(node("s3", client.RoleServer))
	g.mu.Lock()
	answered := make(chan []string, 1)
	go func() { answered <- names(g.servers()) }()
	select {
	case got := <-answered:
		if !slices.Equal(got, []string{"s3"}) {
			t.Errorf("servers() with the lock held = %v, want [s3]", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("servers() waited for the view's lock")
	}
	g.mu.Unlock()
}
