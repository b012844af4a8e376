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
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/raftnode"
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
	contact, heard := lastContact(role, stats["last_contact"])
	_, problem := s.health(leader != "", heard, contact)
	files, filesBytes := s.blobBytes()
	return client.Server{
		Files:        files,
		FilesBytes:   filesBytes,
		Name:         s.cfg.Name,
		Address:      s.node.Addr(),
		HTTP:         s.HTTPAddr(),
		Role:         role,
		Term:         term,
		LastIndex:    s.raft.LastIndex(),
		CommitIndex:  s.raft.CommitIndex(),
		Leader:       string(leader),
		LastContact:  contact,
		Healthy:      problem == "",
		Problem:      problem,
		Version:      s.cfg.Version,
		CommandLevel: int(fsm.CommandLevel),
	}
}

// healthNow is health as self reports it, for /metrics.
func (s *Server) healthNow() (kind, text string) {
	role := "follower"
	if s.raft.State() == raft.Leader {
		role = "leader"
	}
	_, leader := s.raft.LeaderWithID()
	contact, heard := lastContact(role, s.raft.Stats()["last_contact"])
	return s.health(leader != "", heard, contact)
}

// Kinds of problem that make a server unhealthy, as /metrics labels them,
// besides the store's (raftnode.Health).
const (
	problemNoLeader     = "no_leader"
	problemLeaderSilent = "leader_silent"
	problemBehind       = "behind_leader" // lag.go
)

// problemKinds lists every kind, for /metrics.
var problemKinds = []string{problemNoLeader, problemLeaderSilent, raftnode.ProblemLogWrites, raftnode.ProblemCatchingUp, problemBehind}

// health says what makes this server unhealthy, kind and text, or "" and
// "" when nothing does: no known leader, no word from it for too long
// (heard false; contact is how long), failing writes to its log or
// catching up after them (storeHealth), or a log that lacks entries the
// leader committed a while ago (lagWatch).
func (s *Server) health(hasLeader, heard bool, contact string) (kind, text string) {
	if kind, text := s.storeHealth.Problem(time.Now()); kind != "" {
		return kind, text
	}
	switch {
	case !hasLeader:
		return problemNoLeader, "no leader known"
	case !heard && contact == "never":
		return problemLeaderSilent, "never heard from the leader"
	case !heard:
		return problemLeaderSilent, "last heard from the leader " + contact + " ago"
	}
	if n := s.lag.behind.Load(); n > 0 {
		return problemBehind, fmt.Sprintf("behind the leader by %d entries", n)
	}
	return "", ""
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme()+addr+"/v1/agent/self", nil)
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
