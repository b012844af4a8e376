package server_test

import (
	"github.com/netmgr/netmgr/internal/testwait"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// startGroup starts one server on the real stores (raft-boltdb, file
// snapshots, TCP) per data dir, forming a group by gossip, with Raft's
// test timeouts and then tune, and waits for a leader. They stop when the
// test ends.
func startGroup(t *testing.T, dataDirs []string, tune func(*raft.Config)) ([]server.Config, []*server.Server, int) {
	t.Helper()
	cfgs := make([]server.Config, len(dataDirs))
	servers := make([]*server.Server, len(dataDirs))
	for i, dir := range dataDirs {
		cfgs[i] = server.Config{
			Name:            "s" + string(rune('0'+i)),
			DataDir:         dir,
			HTTPAddr:        freeAddr(t),
			RaftAddr:        freeAddr(t),
			GossipAddr:      "127.0.0.1:0",
			BootstrapExpect: len(dataDirs),
			Logger:          servertest.Logger(),
			TuneRaft: func(c *raft.Config) {
				servertest.FastRaft(c)
				if tune != nil {
					tune(c)
				}
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
	testwait.For(t, 20*time.Second, "a leader", func() bool {
		for i, s := range servers {
			if s.IsLeader() {
				leader = i
				return true
			}
		}
		return false
	})
	return cfgs, servers, leader
}

// serverRow finds the server named name in netstatus -s's list.
func serverRow(t *testing.T, cl *client.Client, name string) client.Server {
	t.Helper()
	ss, err := cl.Servers(ctx(t))
	if err != nil {
		t.Fatalf("servers: %v", err)
	}
	for _, s := range ss {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %s in %+v", name, ss)
	return client.Server{}
}

// TestFullLogDiskShowsUnhealthy puts one follower's data dir on a small
// tmpfs and fills it while jobs are submitted: the follower cannot append
// to raft.db, and netstatus -s and its /metrics say so, with the reason,
// while the other two carry on. Once the filler is removed it catches up
// and is healthy again.
func TestFullLogDiskShowsUnhealthy(t *testing.T) {
	disk := servertest.MountTmpfs(t, 4<<20, 0)
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "s0"), filepath.Join(root, "s1"), filepath.Join(root, "s2")}
	cfgs, servers, leader := startGroup(t, dirs, nil)
	full := (leader + 1) % 3
	// The follower's data dir moves to the tmpfs: stop it, move, start.
	if err := servers[full].Shutdown(); err != nil {
		t.Fatal(err)
	}
	cfgs[full].DataDir = filepath.Join(disk, "data")
	cfgs[full].Join = []string{servers[leader].GossipAddr()}
	s, err := server.New(cfgs[full])
	if err != nil {
		t.Fatalf("restart %s on the tmpfs: %v", cfgs[full].Name, err)
	}
	servers[full] = s
	t.Cleanup(func() { _ = s.Shutdown() })
	cl, err := client.New([]string{servers[leader].HTTPAddr()}, client.WithUser("tester"))
	if err != nil {
		t.Fatal(err)
	}
	name := cfgs[full].Name
	testwait.For(t, 20*time.Second, name+" healthy on the tmpfs", func() bool {
		return serverRow(t, cl, name).Healthy
	})

	filler := filepath.Join(disk, "filler")
	if _, err := servertest.Fill(filler); err != nil {
		t.Fatal(err)
	}
	submitted := 0
	var row client.Server
	testwait.For(t, 30*time.Second, name+" unhealthy for its failing log writes", func() bool {
		if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)}); err != nil {
			t.Fatalf("submit with one follower's disk full: %v", err)
		}
		submitted++
		row = serverRow(t, cl, name)
		return !row.Healthy && strings.HasPrefix(row.Problem, "log write")
	})
	t.Logf("after %d submits: %s %s", submitted, name, row.Problem)
	if !strings.Contains(row.Problem, "no space left on device") {
		t.Errorf("problem %q does not say the disk is full", row.Problem)
	}
	m := scrape(t, nil, s.HTTPAddr())
	if m["netmgr_server_healthy"] != 0 || m[`netmgr_server_health_problem{problem="log_write_failing"}`] != 1 ||
		m["netmgr_server_raft_log_write_errors_total"] == 0 {
		t.Errorf("/metrics of %s: healthy %v, log_write_failing %v, write errors %v; want 0, 1, some", name,
			m["netmgr_server_healthy"], m[`netmgr_server_health_problem{problem="log_write_failing"}`], m["netmgr_server_raft_log_write_errors_total"])
	}
	for i := range servers {
		if i != full && !serverRow(t, cl, cfgs[i].Name).Healthy {
			t.Errorf("%s unhealthy while only %s's disk is full: %+v", cfgs[i].Name, name, serverRow(t, cl, cfgs[i].Name))
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, name+" healthy again", func() bool {
		row = serverRow(t, cl, name)
		return row.Healthy && row.Problem == ""
	})
	if got := len(staleJobs(t, nil, s.HTTPAddr())); got != submitted {
		t.Errorf("%s holds %d jobs once healthy, want %d", name, got, submitted)
	}
	if m := scrape(t, nil, s.HTTPAddr()); m["netmgr_server_healthy"] != 1 || m[`netmgr_server_health_problem{problem="log_write_failing"}`] != 0 {
		t.Errorf("/metrics of %s does not say healthy again", name)
	}
}
