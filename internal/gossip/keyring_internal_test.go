package gossip

import (
	"fmt"
	"github.com/netmgr/netmgr/internal/testwait"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// reload writes keys to each node's keyring file and has it reload, one
// node after the other, as an operator's loop over the machines would.
func reload(t *testing.T, nodes []*testNode, keys [][]byte) {
	t.Helper()
	for _, n := range nodes {
		if err := pki.WriteKeyring(n.keyring, keys, true); err != nil {
			t.Fatal(err)
		}
		if err := n.ReloadKeyring(); err != nil {
			t.Fatalf("reload %s: %v", n.name, err)
		}
	}
}

// gossipRound has every node gossip new metadata and waits until every
// node has heard every other's: packets went both ways between every
// pair under the keys they hold now.
func gossipRound(t *testing.T, nodes []*testNode, round string) {
	t.Helper()
	for _, n := range nodes {
		n.SetMeta([]byte(n.name + "/" + round))
		if err := n.PublishMeta(5 * time.Second); err != nil {
			t.Fatalf("%s: publish %s's metadata: %v", round, n.name, err)
		}
	}
	testwait.For(t, 20*time.Second, round+": every node to hear every other's metadata", func() bool {
		for _, a := range nodes {
			for _, b := range nodes {
				if a != b && a.events.metaOf(b.name) != b.name+"/"+round {
					return false
				}
			}
		}
		return true
	})
}

// A pool rotates its key from A to B in the three documented steps
// (add B, use B, remove A), each node reloading its file in turn, and no
// node ever loses sight of another: none is suspected, failed or gone,
// and after each step gossip flows between every pair. After "use B" a
// node holding only B gets in; after "remove A" one holding only A is
// refused by every node, which logs it.
func TestKeyRotationWithoutDowntime(t *testing.T) {
	a, b := pki.NewGossipKey(), pki.NewGossipKey()
	var nodes []*testNode
	for i := range 3 {
		nodes = append(nodes, startNode(t, fmt.Sprintf("n%d", i), "127.0.0.1", a))
	}
	for _, n := range nodes[1:] {
		if _, err := n.Join([]string{nodes[0].Addr()}); err != nil {
			t.Fatalf("%s joins: %v", n.name, err)
		}
	}
	testwait.For(t, 20*time.Second, "the pool to form", func() bool { return sees(nodes...) })
	gossipRound(t, nodes, "formed")

	for _, step := range []struct {
		name string
		keys [][]byte
	}{
		{"add B", [][]byte{a, b}},
		{"use B", [][]byte{b, a}},
		{"remove A", [][]byte{b}},
	} {
		reload(t, nodes, step.keys)
		for _, n := range nodes {
			if got := n.Keys(); !slices.EqualFunc(got, step.keys, slices.Equal) {
				t.Fatalf("%s: %s holds %d keys, not the file's %d in its order", step.name, n.name, len(got), len(step.keys))
			}
		}
		gossipRound(t, nodes, step.name)
		if step.name == "use B" {
			// A node with only B joins any member.
			for i, n := range nodes {
				fresh := startNode(t, fmt.Sprintf("onlyB-%d", i), "127.0.0.1", b)
				if _, err := fresh.Join([]string{n.Addr()}); err != nil {
					t.Fatalf("use B: a node holding only B cannot join %s: %v", n.name, err)
				}
				if err := fresh.Leave(5 * time.Second); err != nil {
					t.Fatalf("use B: %v", err)
				}
			}
		}
	}
	// Every node saw every other throughout: none was reported gone, and
	// none suspected or failed one of the pool.
	for _, n := range nodes {
		for _, gone := range n.events.left() {
			if !slices.ContainsFunc(nodes, func(m *testNode) bool { return m.name == gone }) {
				continue // a node with only B, which left
			}
			t.Errorf("%s saw %s fail or leave during the rotation", n.name, gone)
		}
		for _, m := range nodes {
			if got := n.log.matching("memberlist", "Suspect "+m.name+" "); len(got) > 0 {
				t.Errorf("%s suspected %s: %q", n.name, m.name, got)
			}
		}
	}

	// A node with only A is refused everywhere, and every node says so.
	late := startNode(t, "late", "127.0.0.1", a)
	for _, n := range nodes {
		k, err := late.Join([]string{n.Addr()})
		if k != 0 {
			t.Fatalf("a node holding only A joined %s", n.name)
		}
		if _, ok := pki.GossipKeyProblem(fmt.Sprint(err)); !ok {
			t.Fatalf("a node holding only A was refused by %s for another reason: %v", n.name, err)
		}
		if got := n.log.matching("WARN gossip refused", "not in this member's keyring"); len(got) != 1 {
			t.Errorf("%s logged %d refusals of the node holding only A, want 1: %q", n.name, len(got), got)
		}
		if got := n.log.matching("gossip keyring reloaded", "primary_changed=true"); len(got) != 1 {
			t.Errorf("%s logged %d reloads changing the primary, want 1: %q", n.name, len(got), got)
		}
	}
}

// A keyring file that cannot be used (emptied, or a bad key) is refused
// on reload: the keys in use stay, and the node still takes its key.
func TestReloadKeepsTheKeysOnABadFile(t *testing.T) {
	key := pki.NewGossipKey()
	n := startNode(t, "n", "127.0.0.1", key)
	for _, text := range []string{"# emptied by mistake\n", "bm90IGEga2V5\n"} {
		if err := os.WriteFile(n.keyring, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.ReloadKeyring(); err == nil {
			t.Fatalf("reloaded a keyring file of %q", text)
		}
		if got := n.Keys(); len(got) != 1 || !slices.Equal(got[0], key) {
			t.Fatalf("after reloading %q the keys changed", text)
		}
	}
	peer := startNode(t, "peer", "127.0.0.1", key)
	if _, err := peer.Join([]string{n.Addr()}); err != nil {
		t.Fatalf("the node no longer takes its key: %v", err)
	}
	// A node without a keyring has none to reload.
	plain := startNode(t, "plain", "127.0.0.1")
	if err := plain.ReloadKeyring(); err != nil || plain.Keys() != nil {
		t.Fatalf("a node without a keyring reloads with %v, holds %d keys", err, len(plain.Keys()))
	}
}
