package server

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// bootstrapLoop forms a new Raft group once BootstrapExpect servers with
// the same expectation are alive in gossip. Every one of them bootstraps
// with the identical configuration (all of them, sorted by name), which
// Raft accepts. A server with Raft state, or one that finds a peer already
// in a group, never bootstraps: it is added by the leader instead.
func (s *Server) bootstrapLoop() {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		done, err := s.tryBootstrap()
		if err != nil {
			s.log.Warn("bootstrap attempt failed", "err", err)
		}
		if done {
			return
		}
	}
}

// tryBootstrap bootstraps the group if this server should; done reports
// that it never needs to try again.
func (s *Server) tryBootstrap() (bool, error) {
	if s.raft.State() != raft.Follower || s.raft.Leader() != "" {
		return true, nil
	}
	var peers []raft.Server
	for name, meta := range s.gossip.servers() {
		if meta.Expect != s.cfg.BootstrapExpect || meta.Raft == "" {
			continue
		}
		peers = append(peers, raft.Server{ID: raft.ServerID(name), Address: raft.ServerAddress(meta.Raft)})
	}
	if len(peers) < s.cfg.BootstrapExpect {
		return false, nil
	}
	if s.node.OverTLS() {
		// Gossiping the server role proves nothing; a certificate does.
		if peers = s.verifiedPeers(peers); len(peers) < s.cfg.BootstrapExpect {
			return false, nil
		}
	}
	cfgFuture := s.raft.GetConfiguration()
	if err := cfgFuture.Error(); err != nil {
		return false, fmt.Errorf("read raft configuration: %w", err)
	}
	if len(cfgFuture.Configuration().Servers) > 0 {
		return true, nil // this server already has Raft state
	}
	for _, p := range peers {
		if string(p.ID) == s.cfg.Name {
			continue
		}
		inGroup, err := s.peerInGroup(string(p.ID))
		if err != nil {
			return false, err
		}
		if inGroup {
			s.log.Info("a peer is already in a group; waiting to be added", "peer", p.ID)
			return true, nil
		}
	}
	slices.SortFunc(peers, func(a, b raft.Server) int { return cmp.Compare(a.ID, b.ID) })
	s.log.Info("bootstrapping raft group", "servers", len(peers))
	err := s.raft.BootstrapCluster(raft.Configuration{Servers: peers}).Error()
	if err != nil && err != raft.ErrCantBootstrap {
		return false, fmt.Errorf("bootstrap: %w", err)
	}
	return true, nil
}

// peerInGroup asks a peer whether it already belongs to a Raft group.
func (s *Server) peerInGroup(name string) (bool, error) {
	meta, ok := s.gossip.servers()[name]
	if !ok {
		return false, fmt.Errorf("peer %s left gossip", name)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	self, err := s.askSelf(ctx, meta.HTTP)
	if err != nil {
		return false, fmt.Errorf("peer %s: %w", name, err)
	}
	return self.Leader != "" || self.LastIndex > 0, nil
}
