package server

import (
	"context"
	"fmt"
	"github.com/netmgr/netmgr/internal/testwait"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/raftnode"
)

// Three servers with TLS material form a group over TLS Raft by gossip,
// and the database the leader loads reaches every one of them.
func TestRaftOverTLSFormsAndReplicates(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"), serverID("s1"), serverID("s2"))
	db := writeFile(t, "db", "key fpu\n")
	rec := newLogRecorder()
	var ss []*Server
	for i := range 3 {
		name := fmt.Sprintf("s%d", i)
		cfg := tlsServerConfig(name, p.material(serverID(name)), rec)
		cfg.BootstrapExpect, cfg.DatabaseFile = 3, db
		if i > 0 {
			cfg.Join = []string{ss[0].GossipAddr()}
		}
		ss = append(ss, startServer(t, cfg))
	}
	leader := waitLeader(t, ss)
	testwait.For(t, 15*time.Second, "the database on every server", func() bool {
		for _, s := range ss {
			var idx uint64
			s.fsm.Read(func(v fsm.View) { _, idx = v.Database() })
			if idx == 0 {
				return false
			}
		}
		return true
	})
	if got := raftServers(t, leader); len(got) != 3 {
		t.Fatalf("got raft configuration %v, want the three servers", got)
	}
	// Each server's Raft speaks TLS and proves itself with its own
	// certificate.
	client := p.material(serverID("s0"))
	for _, s := range ss {
		if err := raftnode.VerifyServer(context.Background(), client, s.Name(), s.RaftAddr()); err != nil {
			t.Errorf("%s's raft over TLS: %v", s.Name(), err)
		}
	}
	if got := rec.matching("refused raft connection"); len(got) > 0 {
		t.Errorf("servers of the group refused each other: %q", got)
	}
}
