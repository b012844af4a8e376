package server

import (
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// levelBeforeGossip is the command level of a server that gossips none:
// builds older than the Level field applied commands up to LeaderElected.
const levelBeforeGossip = fsm.LeaderElectedType

// refreshGroupLevel records the level of the servers in the Raft
// configuration (groupLevel): the leader proposes a newer command only
// when no replica would stop on it. The leader loop calls it on every
// membership pass.
func (s *Server) refreshGroupLevel() {
	level := levelBeforeGossip
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		level = groupLevel(f.Configuration().Servers, s.gossip.snapshot())
	}
	s.groupLevel.Store(uint32(level))
}

// groupLevel is the highest command type every one of servers applies, as
// their gossip metadata in pool says, and this build too. A server gossip
// no longer hears from keeps the level it last announced (a server is only
// ever upgraded, never taken back to an older build); one it never heard
// from counts as the oldest.
func groupLevel(servers []raft.Server, pool map[string]member) fsm.MessageType {
	level := fsm.CommandLevel
	for _, srv := range servers {
		l := levelBeforeGossip
		if m, ok := pool[string(srv.ID)]; ok && m.Meta.Level > 0 {
			l = fsm.MessageType(min(m.Meta.Level, 255))
		}
		level = min(level, l)
	}
	return level
}

// groupApplies reports whether every server applies commands of type t.
func (s *Server) groupApplies(t fsm.MessageType) bool {
	return fsm.MessageType(s.groupLevel.Load()) >= t
}
