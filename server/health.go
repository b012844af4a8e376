package server

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// recordHealth commits the health a machine's stub reported with its
// lease renewal (client.LeaseRequest.Problem), which differs from the one
// the database records: a problem drains the machine, an empty one
// undrains it. Stubs report with every renewal, so a commit that fails is
// tried again with the next one; nothing is committed until every server
// applies MachineHealth. It blocks for the commit.
func (s *Server) recordHealth(machine, problem string) {
	if !s.groupApplies(fsm.MachineHealthType) {
		return
	}
	res, err := s.apply(fsm.MachineHealthType, fsm.MachineHealth{At: time.Now().UTC(), Machine: machine, Problem: problem})
	switch {
	case err != nil:
		s.log.Warn("commit machine health failed", "machine", machine, "problem", problem, "err", err)
	case res.Err != nil:
		s.log.Warn("machine health refused", "machine", machine, "err", res.Err)
	case problem != "":
		s.log.Warn("machine drains itself", "machine", machine, "problem", problem)
	default:
		s.log.Info("machine healthy again", "machine", machine)
	}
}

// recordAsleep commits the owner policy's verdict a machine's stub
// reported with its lease renewal (client.LeaseRequest.Asleep), which
// differs from the one the database records: a reason puts the machine to
// sleep, an empty one wakes it. Stubs report with every renewal, so a
// commit that fails is tried again with the next one; nothing is
// committed until every server applies MachineAsleep. It blocks for the
// commit.
func (s *Server) recordAsleep(machine, reason string) {
	if !s.groupApplies(fsm.MachineAsleepType) {
		return
	}
	res, err := s.apply(fsm.MachineAsleepType, fsm.MachineAsleep{At: time.Now().UTC(), Machine: machine, Reason: reason})
	switch {
	case err != nil:
		s.log.Warn("commit machine asleep failed", "machine", machine, "reason", reason, "err", err)
	case res.Err != nil:
		s.log.Warn("machine asleep refused", "machine", machine, "err", res.Err)
	case reason != "":
		s.log.Info("machine asleep: no new work", "machine", machine, "reason", reason)
	default:
		s.log.Info("machine awake: takes new work", "machine", machine)
	}
}
