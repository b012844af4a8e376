package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/server/raftnode"
)

// refuseServer logs (once a minute per member) and counts a refusal to
// let name into the Raft group.
func (s *Server) refuseServer(name, addr string, why error) {
	log, held := s.admission.Refuse(name, time.Now())
	s.metrics.denied(denyRogueServer)
	if log {
		s.log.Warn(fmt.Sprintf("refused to add server %s: %v", name, why),
			"raft", addr, "refused_since_last_logged", held,
			"hint", "only a member with a server certificate of the cluster CA naming it joins the raft group")
	}
}

// admitServer adds the gossip member name to the Raft configuration as
// a voter at addr, once it proved itself a server (when Raft runs over
// TLS; raftnode.VerifyServer), in a goroutine that wg tracks. It returns
// at once. Over another transport (plain TCP under --insecure, or a
// test's in-memory one) it adds the voter at once: addresses there prove
// nothing.
func (m *membership) admitServer(ctx context.Context, name, addr string) {
	s := m.s
	if !s.node.OverTLS() {
		s.addVoter(name, addr)
		return
	}
	if !s.admission.Begin(name, time.Now()) {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := raftnode.VerifyServer(ctx, s.cfg.TLS, name, addr)
		s.admission.End(name, err != nil, time.Now())
		switch {
		case ctx.Err() != nil:
		case err != nil:
			s.refuseServer(name, addr, err)
		default:
			s.addVoter(name, addr)
		}
	}()
}

// verifiedPeers returns the peers of a bootstrap configuration that
// proved themselves servers (admitServer's check), this server among
// them; the others are refused. It dials each peer, so it is for the
// moment a server is about to bootstrap.
func (s *Server) verifiedPeers(peers []raft.Server) []raft.Server {
	var out []raft.Server
	for _, p := range peers {
		name, addr := string(p.ID), string(p.Address)
		if name == s.cfg.Name {
			out = append(out, p)
			continue
		}
		if !s.admission.Begin(name, time.Now()) {
			continue // refused a moment ago, or being checked
		}
		err := raftnode.VerifyServer(s.ctx, s.cfg.TLS, name, addr)
		s.admission.End(name, err != nil, time.Now())
		if err != nil {
			if s.ctx.Err() == nil {
				s.refuseServer(name, addr, err)
			}
			continue
		}
		out = append(out, p)
	}
	return out
}
