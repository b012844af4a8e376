package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// command is one typed command for the Raft log, before encoding.
type command struct {
	t    fsm.MessageType
	body any
}

// apply is the one path by which the server changes the database: it
// encodes the command, applies it through Raft on this server (which must
// lead) and returns the FSM's result. A rule violation comes back as
// Result.Err, not as the error.
func (s *Server) apply(t fsm.MessageType, body any) (*fsm.Result, error) {
	res, err := s.applyAll([]command{{t, body}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// applyAll applies cmds in order, proposing them all before waiting for
// any, so that Raft commits them in as few disk writes and replication
// rounds as it can. It fails as a whole if a command cannot be encoded or
// committed (those before it may have been).
func (s *Server) applyAll(cmds []command) ([]*fsm.Result, error) {
	datas := make([][]byte, len(cmds))
	for i, c := range cmds {
		var err error
		if datas[i], err = fsm.Encode(c.t, c.body); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	futures := make([]raft.ApplyFuture, len(cmds))
	for i, data := range datas {
		futures[i] = s.raft.Apply(data, s.cfg.ApplyTimeout)
	}
	results := make([]*fsm.Result, len(cmds))
	for i, f := range futures {
		t := cmds[i].t
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
				return nil, fmt.Errorf("apply %v: %w", t, errNotLeader)
			}
			return nil, fmt.Errorf("apply %v: %w", t, err)
		}
		s.metrics.committed(t, start)
		res, ok := f.Response().(*fsm.Result)
		if !ok {
			return nil, fmt.Errorf("apply %v: unexpected response %T", t, f.Response())
		}
		results[i] = res
	}
	if st := s.leader.Load(); st != nil && st.nudge != nil && len(futures) > 0 {
		st.nudge.applied(futures[len(futures)-1].Index())
	}
	return results, nil
}
