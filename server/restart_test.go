package server_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// freeAddr returns an address on 127.0.0.1 for a server that is started
// again on it: a port below the kernel's ephemeral range
// (servertest.FreePorts), as one the kernel handed out for ":0" could be
// the source port of another test's connection by the restart ("bind:
// address already in use", TestDashboardTimelineSurvivesRestart in CI).
func freeAddr(t *testing.T) string {
	t.Helper()
	ports, err := servertest.FreePorts(1)
	if err != nil {
		t.Fatalf("pick a port: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
}

// soloOnDataDir returns a function that starts a one-server group on the
// real stores (raft-boltdb and file snapshots) in one data dir, which
// snapshots every 3 entries and keeps 1 trailing entry, and returns it,
// once leader, with a client; each call starts it again on the same dir.
func soloOnDataDir(t *testing.T) func() (*server.Server, *client.Client) {
	cfg := server.Config{
		Name:            "solo",
		DataDir:         t.TempDir(),
		HTTPAddr:        "127.0.0.1:0",
		RaftAddr:        freeAddr(t),
		GossipAddr:      "127.0.0.1:0",
		BootstrapExpect: 1,
		Logger:          servertest.Logger(),
		TuneRaft: func(c *raft.Config) {
			servertest.FastRaft(c)
			c.SnapshotThreshold = 3
			c.TrailingLogs = 1
		},
	}
	return func() (*server.Server, *client.Client) {
		t.Helper()
		s, err := server.New(cfg)
		if err != nil {
			t.Fatalf("start server: %v", err)
		}
		t.Cleanup(func() { _ = s.Shutdown() })
		testwait.For(t, 10*time.Second, "leader", s.IsLeader)
		cl, err := client.New([]string{s.HTTPAddr()}, client.WithUser("tester"))
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		return s, cl
	}
}

// TestRestartOnDataDirKeepsDatabase runs a single server on the real stores
// (raft-boltdb and file snapshots), takes a snapshot midway, stops it and
// starts it again on the same data dir: every job is still there and ids
// continue where they stopped.
func TestRestartOnDataDirKeepsDatabase(t *testing.T) {
	t.Parallel()
	start := soloOnDataDir(t)

	s, cl := start()
	for range 5 {
		if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 2)}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	}
	if err := s.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)}); err != nil {
		t.Fatalf("submit after snapshot: %v", err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	_, cl = start()
	jobs, err := cl.Jobs(ctx(t))
	if err != nil {
		t.Fatalf("jobs after restart: %v", err)
	}
	if len(jobs) != 6 {
		t.Fatalf("got %d jobs after restart, want 6", len(jobs))
	}
	next, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)})
	if err != nil {
		t.Fatalf("submit after restart: %v", err)
	}
	if next.ID != 7 {
		t.Errorf("first id after restart %d, want 7", next.ID)
	}
}
