package raftnode

import (
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// nopFSM is a state machine that keeps nothing.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(r io.ReadCloser) error       { return r.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnapshot) Release()                          {}

// The leader heartbeats at its own pace (LeaderPaceFactor times the
// followers' heartbeat timeout) while the followers keep theirs and
// RelaxedPace allows it, a server that hands over the leadership takes
// the followers' again, and a leader that RelaxedPace no longer allows
// takes it at RefreshPace; LeaderCh still tells the server of each
// change.
func TestLeaderHeartbeatsAtItsOwnPace(t *testing.T) {
	const hb = 100 * time.Millisecond
	var relaxed atomic.Bool
	relaxed.Store(true)
	var (
		nodes  []*Node
		trans  []*raft.InmemTransport
		config raft.Configuration
	)
	for i := range 3 {
		addr, tr := raft.NewInmemTransport("")
		trans = append(trans, tr)
		id := fmt.Sprintf("s%d", i)
		config.Servers = append(config.Servers, raft.Server{ID: raft.ServerID(id), Address: addr})
		n, err := Open(Config{
			Name: id, InmemStore: true, Transport: tr, FSM: nopFSM{}, Health: &Health{},
			Logger: slog.New(slog.DiscardHandler), RelaxedPace: relaxed.Load,
			Tune: func(c *raft.Config) {
				c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = hb, hb, hb
			},
		})
		if err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
		nodes = append(nodes, n)
	}
	for i, a := range trans {
		for j, b := range trans {
			if i != j {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.Raft().Shutdown().Error()
			n.Close()
		}
	})
	if err := nodes[0].Raft().BootstrapCluster(config).Error(); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}

	// paced waits until exactly one node leads, LeaderCh said so, and each
	// node runs at its role's pace.
	paced := func() int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			leader, ok := -1, true
			for i, n := range nodes {
				select {
				case <-n.LeaderCh():
				default:
				}
				want := hb
				if n.Raft().State() == raft.Leader {
					if leader >= 0 {
						ok = false
					}
					leader = i
					if relaxed.Load() {
						want = LeaderPaceFactor * hb
					}
				}
				rc := n.Raft().ReloadableConfig()
				if rc.HeartbeatTimeout != want || rc.ElectionTimeout != want {
					ok = false
				}
			}
			if ok && leader >= 0 {
				return leader
			}
			if time.Now().After(deadline) {
				for i, n := range nodes {
					rc := n.Raft().ReloadableConfig()
					t.Logf("s%d: %s, heartbeat timeout %s, election %s", i, n.Raft().State(), rc.HeartbeatTimeout, rc.ElectionTimeout)
				}
				t.Fatalf("no leader at its pace with followers at theirs within 10 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := paced()
	if err := nodes[first].Raft().LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	second := paced()
	if second == first {
		t.Fatalf("s%d still leads after handing the leadership over", first)
	}
	relaxed.Store(false)
	for _, n := range nodes {
		if err := n.RefreshPace(); err != nil {
			t.Fatalf("refresh pace: %v", err)
		}
	}
	paced()
}
