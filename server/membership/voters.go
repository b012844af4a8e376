package membership

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/raftnode"
)

// Raft is what the membership duty uses of the server's Raft
// (*raft.Raft): its configuration, and adding a voter to it.
type Raft interface {
	GetConfiguration() raft.ConfigurationFuture
	AddVoter(id raft.ServerID, address raft.ServerAddress, prevIndex uint64, timeout time.Duration) raft.IndexFuture
}

// Admit is the admission check of a would-be server when Raft runs over
// TLS: its Raft address must answer with a server certificate of the
// cluster CA naming it.
type Admit struct {
	// Record is the server's record of checks and refusals, which
	// outlives leaderships.
	Record *raftnode.Admission
	// Verify checks that the Raft address addr answers as server name
	// (raftnode.VerifyServer with the cluster's TLS material).
	Verify func(ctx context.Context, name, addr string) error
	// Refuse logs and counts a refusal.
	Refuse func(name, addr string, why error)
}

// addServers adds live servers that gossip knows and Raft does not, once
// each proved itself a server when the group runs TLS (admitServer).
func (m *Watcher) addServers(ctx context.Context, pool map[string]Member) {
	if m.cfg.Raft == nil {
		return
	}
	f := m.cfg.Raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	inConfig := make(map[string]bool)
	for _, srv := range f.Configuration().Servers {
		inConfig[string(srv.ID)] = true
	}
	for name, mem := range pool {
		if mem.Meta.Role != client.RoleServer || !mem.Alive || inConfig[name] || mem.Meta.Raft == "" {
			continue
		}
		m.admitServer(ctx, name, mem.Meta.Raft)
	}
}

// admitServer adds the gossip member name to the Raft configuration as
// a voter at addr, once it proved itself a server (Config.Admit), in a
// goroutine that Wait waits for. It returns at once. Without Admit it
// adds the voter at once.
func (m *Watcher) admitServer(ctx context.Context, name, addr string) {
	a := m.cfg.Admit
	if a == nil {
		m.addVoter(name, addr)
		return
	}
	if !a.Record.Begin(name, time.Now()) {
		return
	}
	m.wg.Go(func() {
		err := a.Verify(ctx, name, addr)
		a.Record.End(name, err != nil, time.Now())
		switch {
		case ctx.Err() != nil:
		case err != nil:
			a.Refuse(name, addr, err)
		default:
			m.addVoter(name, addr)
		}
	})
}

// addVoter adds name at addr to the Raft configuration as a voter.
func (m *Watcher) addVoter(name, addr string) {
	log := m.h.Log()
	log.Info("adding server to the raft group", "server", name, "raft", addr)
	if err := m.cfg.Raft.AddVoter(raft.ServerID(name), raft.ServerAddress(addr), 0, 5*time.Second).Error(); err != nil {
		log.Warn("add voter failed", "server", name, "err", err)
	}
}
