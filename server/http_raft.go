package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// removeTimeout bounds how long a removal waits to be committed.
const removeTimeout = 5 * time.Second

// handleRemoveServer removes a dead server from the Raft configuration
// (admins only). It refuses the leader, a name outside the configuration
// (404) and a server that gossip shows alive (409): membership.addServers
// adds a live server back, so removal is for servers already stopped.
func (s *Server) handleRemoveServer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	user, ok := s.requireAdmin(w, r, "remove server "+name)
	if !ok {
		return
	}
	if name == s.cfg.Name {
		s.writeError(w, http.StatusConflict, fmt.Errorf("%s: %w", name, errRemoveLeader))
		return
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		s.writeError(w, http.StatusServiceUnavailable, fmt.Errorf("read raft configuration: %w", err))
		return
	}
	var member bool
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == name {
			member = true
			break
		}
	}
	if !member {
		s.writeError(w, http.StatusNotFound, fmt.Errorf("%s is %w", name, errNotAMember))
		return
	}
	if mem, ok := s.gossip.member(name); ok && mem.Alive {
		s.writeError(w, http.StatusConflict, fmt.Errorf("%s: %w", name, errRemoveAlive))
		return
	}
	if err := s.raft.RemoveServer(raft.ServerID(name), 0, removeTimeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			s.writeError(w, http.StatusServiceUnavailable, fmt.Errorf("remove %s: %w", name, errNoLeader))
			return
		}
		s.writeError(w, http.StatusInternalServerError, fmt.Errorf("remove %s: %w", name, err))
		return
	}
	s.log.Warn("server removed from the raft group", "server", name, "by", user)
	// The FSM never sees a configuration change: record one for the
	// events. Informational, so older replicas skip it.
	removed := fsm.ServerRemoved{At: time.Now().UTC(), Name: name, By: user}
	if _, err := s.apply(fsm.ServerRemovedType|fsm.IgnoreUnknownFlag, removed); err != nil {
		s.log.Warn("server removal not recorded in the events", "server", name, "err", err)
	}
	s.writeJSON(w, http.StatusOK, struct{}{})
}
