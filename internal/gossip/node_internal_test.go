package gossip

import (
	"bytes"
	"github.com/netmgr/netmgr/internal/testwait"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// Two nodes join, one changes its metadata and the other hears it, then
// it leaves and the other hears that it left, not that it failed.
func TestJoinMetadataAndLeave(t *testing.T) {
	a := startNode(t, "a", "127.0.0.1")
	b := startNode(t, "b", "127.0.0.1")
	if n, err := b.Join([]string{a.Addr()}); n != 1 || err != nil {
		t.Fatalf("join: %d, %v", n, err)
	}
	testwait.For(t, 10*time.Second, "each to see the other", func() bool { return sees(a, b) })
	if got := a.events.metaOf("b"); got != "b/0" {
		t.Fatalf("a heard b's metadata %q, want its first", got)
	}
	if a.NumMembers() != 2 {
		t.Fatalf("a counts %d members, want 2", a.NumMembers())
	}

	b.SetMeta([]byte("b/1"))
	if err := b.PublishMeta(5 * time.Second); err != nil {
		t.Fatalf("publish: %v", err)
	}
	testwait.For(t, 10*time.Second, "a to hear b's new metadata", func() bool { return a.events.metaOf("b") == "b/1" })

	if err := b.Leave(5 * time.Second); err != nil {
		t.Fatalf("leave: %v", err)
	}
	testwait.For(t, 10*time.Second, "a to hear b leave", func() bool {
		return slices.Equal(a.events.left(), []string{"b"}) && !slices.Contains(a.Members(), "b")
	})
	if got := a.log.matching("as failed"); len(got) > 0 {
		t.Fatalf("a took b's leaving for a failure: %q", got)
	}
}

// Metadata too large for memberlist is logged and gossiped as none
// (memberlist would panic on it).
func TestMetadataTooLarge(t *testing.T) {
	n := startNode(t, "n", "127.0.0.1")
	n.SetMeta(bytes.Repeat([]byte("x"), memberlist.MetaMaxSize+1))
	if got := n.meta.NodeMeta(memberlist.MetaMaxSize); got != nil {
		t.Fatalf("served %d bytes of metadata over the limit", len(got))
	}
	if got := n.log.matching("ERROR gossip metadata does not fit"); len(got) != 1 {
		t.Fatalf("logged %q, want the metadata that does not fit", got)
	}
}
