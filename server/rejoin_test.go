package server_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
)

// TestLeaderJoinsMachineGossipLacks stops a machine's stub, so that the
// machine goes down, and starts it again on its API address but joining
// nobody: its gossip node is a pool of its own, as a stub's is once it has
// forgotten servers that came back at addresses it does not know. The
// leader finds it from the database (the stub's API address), asks it for
// its gossip address and joins it, and the machine is up again.
func TestLeaderJoinsMachineGossipLacks(t *testing.T) {
	t.Parallel()
	c, cl := poolWithStubs(t, 3, "alpha")
	old := c.Stubs[0]
	addr := old.HTTPAddr()
	if err := old.Shutdown(); err != nil {
		t.Fatalf("stop alpha: %v", err)
	}
	state := func() string {
		ms, err := cl.Machines(ctx(t))
		if err != nil {
			return ""
		}
		for _, m := range ms {
			if m.Name == "alpha" {
				return m.State
			}
		}
		return ""
	}
	testwait.For(t, 15*time.Second, "alpha down", func() bool { return state() == client.MachineDown })

	dir := t.TempDir()
	st, err := stub.New(stub.Config{
		Name:       "alpha",
		DataDir:    filepath.Join(dir, "data"),
		ExecDir:    filepath.Join(dir, "exec"),
		HTTPAddr:   addr,
		GossipAddr: "127.0.0.1:0",
		Logger:     servertest.Logger(),
		TLS:        c.Material(pki.Identity{Role: pki.RoleStub, Name: "alpha"}),
	})
	if err != nil {
		t.Fatalf("start alpha again: %v", err)
	}
	t.Cleanup(func() { _ = st.Shutdown() })
	testwait.For(t, 30*time.Second, "alpha up again", func() bool { return state() == client.MachineUp })
}
