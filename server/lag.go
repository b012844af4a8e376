package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// lagEvery is how often a follower compares its log with the leader's
// commit index.
const lagEvery = time.Second

// lagWatch is how far this server's log is behind what the leader has
// committed. A follower that cannot append (its disk is full) keeps
// hearing the leader's heartbeats, so Raft's last contact alone calls it
// healthy.
type lagWatch struct {
	// behind is how many entries the leader had committed that this
	// server's log lacks, when it also lacked entries committed a
	// round earlier; 0 otherwise.
	behind atomic.Uint64
}

// watchLag asks the leader for its commit index every lagEvery until the
// server stops, and compares it with this server's last log index: one
// that still lacks entries the leader had committed a round ago is
// behind. On the leader, and whenever the log holds everything committed,
// it tells the store's health that the server has caught up.
func (s *Server) watchLag() {
	tick := time.NewTicker(lagEvery)
	defer tick.Stop()
	var prev uint64 // the leader's commit index a round ago
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		prev = s.checkLag(prev)
	}
}

// checkLag is one round of watchLag; prev is the leader's commit index of
// the round before, and it returns this round's (prev when it learnt
// none).
func (s *Server) checkLag(prev uint64) uint64 {
	at := time.Now()
	if s.raft.State() == raft.Leader {
		s.lag.behind.Store(0)
		s.storeHealth.CaughtUp(at)
		return 0
	}
	commit, err := s.leaderCommit()
	if err != nil {
		s.log.Debug("lag check", "err", err)
		return prev
	}
	behind, caughtUp := lagOf(s.raft.LastIndex(), commit, prev)
	s.lag.behind.Store(behind)
	if caughtUp {
		s.storeHealth.CaughtUp(at)
	}
	return commit
}

// lagOf compares a follower's last log index with the leader's commit
// index now and a round ago (prev): it is behind by what it lacks of the
// commits when it still lacks some of a round ago, and caught up when it
// lacks none. Entries committed since the last round may still be on
// their way: lacking only those is neither.
func lagOf(last, commit, prev uint64) (behind uint64, caughtUp bool) {
	switch {
	case last >= commit:
		return 0, true
	case last < prev:
		return commit - last, false
	}
	return 0, false
}

// leaderCommit asks the leader for its commit index.
func (s *Server) leaderCommit() (uint64, error) {
	_, id := s.raft.LeaderWithID()
	if id == "" {
		return 0, errNoLeader
	}
	meta, ok := s.gossip.servers()[string(id)]
	if !ok {
		return 0, fmt.Errorf("leader %s is not in the gossip pool", id)
	}
	ctx, cancel := context.WithTimeout(s.ctx, lagEvery)
	defer cancel()
	peer, err := s.askSelf(ctx, meta.HTTP)
	if err != nil {
		return 0, err
	}
	return peer.CommitIndex, nil
}
