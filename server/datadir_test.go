package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestDataDirMovedAsideRejoins follows the advice a server with a damaged
// data dir gives: stop it, move its data dir aside, start it again with an
// empty one under the same name and addresses. It rejoins the group, which
// has compacted its log, by installing a snapshot from the leader, and
// then has every job.
func TestDataDirMovedAsideRejoins(t *testing.T) {
	root := t.TempDir()
	cfgs := make([]server.Config, 3)
	servers := make([]*server.Server, 3)
	for i := range cfgs {
		cfgs[i] = server.Config{
			Name:            []string{"s0", "s1", "s2"}[i],
			DataDir:         filepath.Join(root, []string{"s0", "s1", "s2"}[i]),
			HTTPAddr:        freeAddr(t),
			RaftAddr:        freeAddr(t),
			GossipAddr:      "127.0.0.1:0",
			BootstrapExpect: 3,
			Logger:          servertest.Logger(),
			TuneRaft: func(c *raft.Config) {
				servertest.FastRaft(c)
				c.SnapshotThreshold = 3
				c.TrailingLogs = 1
			},
		}
		if i > 0 {
			cfgs[i].Join = []string{servers[0].GossipAddr()}
		}
		s, err := server.New(cfgs[i])
		if err != nil {
			t.Fatalf("start %s: %v", cfgs[i].Name, err)
		}
		servers[i] = s
		t.Cleanup(func() { _ = servers[i].Shutdown() })
	}
	leader := -1
	servertest.WaitFor(t, 20*time.Second, "a leader", func() bool {
		for i, s := range servers {
			if s.IsLeader() {
				leader = i
				return true
			}
		}
		return false
	})
	cl, err := client.New([]string{servers[leader].HTTPAddr()}, client.WithUser("tester"))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	}

	moved := (leader + 1) % 3
	if err := servers[moved].Shutdown(); err != nil {
		t.Fatalf("stop %s: %v", cfgs[moved].Name, err)
	}
	if err := os.Rename(cfgs[moved].DataDir, cfgs[moved].DataDir+".damaged"); err != nil {
		t.Fatal(err)
	}
	// More jobs while it is away, and a snapshot that compacts the
	// leader's log: the log alone can no longer rebuild the database.
	for range 3 {
		if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	}
	if err := servers[leader].Snapshot(); err != nil {
		t.Fatalf("snapshot on the leader: %v", err)
	}

	cfgs[moved].Join = []string{servers[leader].GossipAddr()}
	s, err := server.New(cfgs[moved])
	if err != nil {
		t.Fatalf("start %s on an empty data dir: %v", cfgs[moved].Name, err)
	}
	servers[moved] = s
	servertest.WaitFor(t, 30*time.Second, "the emptied server to have every job", func() bool {
		return len(staleJobs(t, s.HTTPAddr())) == 8
	})
	snaps, err := os.ReadDir(filepath.Join(cfgs[moved].DataDir, "snapshots"))
	if err != nil || len(snaps) == 0 {
		t.Errorf("no snapshot installed in the new data dir (%v): it did not catch up from a snapshot", err)
	}
}
