package server

import (
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// oldestLevel is the command level of the oldest release a server of the
// group may run, 1.0's: a server that gossips no level, or that gossip has
// not heard from, counts as that release. Raise it only when upgrades from
// 1.0 are no longer supported. It is not fsm.CommandLevel, which moves
// with every new command type.
const oldestLevel = fsm.SubmitsType

// refreshGroupLevel records the level of the servers in the Raft
// configuration (groupLevel): the leader proposes a newer command only
// when no replica would stop on it. The leader loop calls it on every
// membership pass.
func (s *Server) refreshGroupLevel() {
	level := oldestLevel
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		level = groupLevel(f.Configuration().Servers, s.gossip.serverMembers())
	}
	s.groupLevel.Store(uint32(level))
}

// groupLevel is the highest command type every one of servers applies, as
// their gossip metadata in pool (the server members at least) says, and this build too. A server gossip
// no longer hears from keeps the level it last announced (a server is only
// ever upgraded, never taken back to an older build); one it never heard
// from counts as 1.0 (oldestLevel).
func groupLevel(servers []raft.Server, pool map[string]member) fsm.MessageType {
	level := fsm.CommandLevel
	for _, srv := range servers {
		l := oldestLevel
		if m, ok := pool[string(srv.ID)]; ok && m.Meta.Level > 0 {
			l = fsm.MessageType(min(m.Meta.Level, 255))
		}
		level = min(level, l)
	}
	return level
}

// groupApplies reports whether every server applies commands of type t.
// Every 1.0 server applies types up to oldestLevel; the leader asks only
// before proposing a type numbered above it.
func (s *Server) groupApplies(t fsm.MessageType) bool {
	return fsm.MessageType(s.groupLevel.Load()) >= t
}

// groupAppliesNow is groupApplies, asking the Raft configuration and
// gossip again before it says no: a leader records the group's level on
// its ticks, so a request just after an election could otherwise be
// refused by the level it started with (1.0's).
func (s *Server) groupAppliesNow(t fsm.MessageType) bool {
	if s.groupApplies(t) {
		return true
	}
	s.refreshGroupLevel()
	return s.groupApplies(t)
}

// groupSupports reports whether every server applies what feature f
// needs (fsm's feature table), asking again before it says no, as
// groupAppliesNow.
func (s *Server) groupSupports(f fsm.Feature) bool { return s.groupAppliesNow(f.Level) }
