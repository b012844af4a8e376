package server_test

import (
	"github.com/netmgr/netmgr/internal/testwait"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server"
)

// TestDataDirMovedAsideRejoins follows the advice a server with a damaged
// data dir gives: stop it, move its data dir aside, start it again with an
// empty one under the same name and addresses. It rejoins the group, which
// has compacted its log, by installing a snapshot from the leader, and
// then has every job.
func TestDataDirMovedAsideRejoins(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "s0"), filepath.Join(root, "s1"), filepath.Join(root, "s2")}
	cfgs, servers, leader := startGroup(t, dirs, func(c *raft.Config) {
		c.SnapshotThreshold = 3
		c.TrailingLogs = 1
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
	// Both live servers compact: on a loaded machine leadership may have
	// moved since startGroup, and whichever leads must lack the old log.
	for i, srv := range servers {
		if i == moved {
			continue
		}
		if err := srv.Snapshot(); err != nil {
			t.Fatalf("snapshot on %s: %v", cfgs[i].Name, err)
		}
	}

	cfgs[moved].Join = []string{servers[leader].GossipAddr()}
	s, err := server.New(cfgs[moved])
	if err != nil {
		t.Fatalf("start %s on an empty data dir: %v", cfgs[moved].Name, err)
	}
	servers[moved] = s
	t.Cleanup(func() { _ = s.Shutdown() })
	testwait.For(t, 30*time.Second, "the emptied server to have every job", func() bool {
		return len(staleJobs(t, nil, s.HTTPAddr())) == 8
	})
	snaps, err := os.ReadDir(filepath.Join(cfgs[moved].DataDir, "snapshots"))
	if err != nil || len(snaps) == 0 {
		t.Errorf("no snapshot installed in the new data dir (%v): it did not catch up from a snapshot", err)
	}
}
