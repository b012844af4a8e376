package server

import (
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

// verifiedPeers returns the peers of a bootstrap configuration that
// proved themselves servers (the check membership.Admit makes), this server among
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
