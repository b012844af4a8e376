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
