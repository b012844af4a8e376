package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
)

// self describes this server as it sees itself.
func (s *Server) self() client.Server {
	stats := s.raft.Stats()
	term, _ := strconv.ParseUint(stats["term"], 10, 64)
	_, leader := s.raft.LeaderWithID()
	role := "unknown"
	switch s.raft.State() {
	case raft.Leader:
		role = "leader"
	case raft.Follower:
		role = "follower"
	case raft.Candidate:
		role = "candidate"
	case raft.Shutdown:
		role = "shutdown"
	}
	contact, healthy := lastContact(role, stats["last_contact"])
	return client.Server{
		Name:        s.cfg.Name,
		Address:     string(s.node.transport.LocalAddr()),
		HTTP:        s.HTTPAddr(),
		Role:        role,
		Term:        term,
		LastIndex:   s.raft.LastIndex(),
		Leader:      string(leader),
		LastContact: contact,
		Healthy:     healthy && leader != "",
	}
}

// healthyContact is how recently a follower must have heard from its
// leader to be healthy: two of the production heartbeat timeouts.
const healthyContact = 2 * 500 * time.Millisecond

// lastContact normalizes raft.Stats()["last_contact"] ("never", "0" on the
// leader, or a duration) to "leader", "never" or a duration rounded to the
// millisecond, and reports whether that contact is recent enough.
func lastContact(role, stat string) (string, bool) {
	switch {
	case role == "leader":
		return "leader", true
	case stat == "never" || stat == "":
		return "never", false
	case stat == "0":
		// The leader's own value; a server that just lost leadership.
		return "0s", true
	}
	d, err := time.ParseDuration(stat)
	if err != nil {
		return stat, false
	}
	if d >= time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	return d.String(), d <= healthyContact
}

// askSelf asks the server whose API is at addr how it sees itself (GET
// /v1/agent/self).
func (s *Server) askSelf(ctx context.Context, addr string) (client.Server, error) {
	var peer client.Server
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/agent/self", nil)
	if err != nil {
		return peer, fmt.Errorf("ask %s: %w", addr, err)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return peer, fmt.Errorf("ask %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&peer); err != nil {
		return peer, fmt.Errorf("read answer of %s: %w", addr, err)
	}
	return peer, nil
}
