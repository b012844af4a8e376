package raftnode

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// LeaderPaceFactor is how much longer than a follower's heartbeat timeout
// the leader's own is. hashicorp/raft ties two things to one setting: a
// follower starts an election when it has heard nothing for its
// HeartbeatTimeout, and a leader heartbeats every HeartbeatTimeout/10 to
// HeartbeatTimeout/5. The first decides how soon a dead leader is
// replaced (500 ms, node.go); the second is most of an idle server's CPU
// (Raft's heartbeats and the Go runtime's wake-ups around them, 13-16
// round trips a second to each follower over TLS). A leader that takes a
// heartbeat timeout twice the followers' heartbeats every 100-200 ms:
// a follower still hears from it two to five times in its 500 ms, a dead
// leader is noticed as soon as before, and the idle group does half the
// round trips. The leader's step-down check (LeaderLeaseTimeout, fixed at
// Open) is unchanged, and a renewal's VerifyLeader round still sends its
// own heartbeats at once.
//
// What it costs is margin: a leader stalled for 300 ms (its process
// starved of CPU, a long pause) now misses a follower's 500 ms, where
// before it took 400. So the pace is the leader's only while
// Config.RelaxedPace says so: the server allows it in small pools, where
// the heartbeats are most of an idle leader's work; in large ones they are
// a few percent of it, and two 5,000-machine runs on a shared 2-core box
// with the pace lost their leader for minutes after an outage and after a
// server's restart.
const LeaderPaceFactor = 2

// pacer moves a node's Raft timeouts between the follower's and the
// leader's as its leadership changes (LeaderPaceFactor), while relaxed
// allows the leader's.
type pacer struct {
	raft *raft.Raft
	// heartbeat and election are the timeouts Open set, the follower's.
	heartbeat, election time.Duration
	// relaxed reports whether a leader may take its own pace now; nil:
	// never (Config.RelaxedPace).
	relaxed func() bool

	mu     sync.Mutex
	leader bool // Raft's last word on this node's leadership
	paced  bool // the leader's timeouts are in force
}

// set records whether this node leads and gives Raft the timeouts that
// go with it.
func (p *pacer) set(leader bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leader = leader
	return p.apply()
}

// refresh asks relaxed again and gives Raft the timeouts that go with
// the answer.
func (p *pacer) refresh() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.apply()
}

// apply gives Raft the leader's pace when this node leads and relaxed
// allows it, the follower's otherwise. A node that stops being leader
// takes the follower's shorter timeout at once: Raft then checks its last
// contact again (ReloadConfig wakes its follower loop), and a deposed
// leader that has heard from no new one yet stands for election at once
// rather than after 0.5-1 s (pre-vote still asks the others first, who
// refuse while they hear from a leader). Called with p.mu held.
func (p *pacer) apply() error {
	paced := p.leader && p.relaxed != nil && p.relaxed()
	if paced == p.paced {
		return nil
	}
	rc := p.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = p.heartbeat, p.election
	if paced {
		rc.HeartbeatTimeout = LeaderPaceFactor * p.heartbeat
		// Raft refuses an election timeout below the heartbeat
		// timeout; a leader does not use its own.
		rc.ElectionTimeout = max(p.election, rc.HeartbeatTimeout)
	}
	if err := p.raft.ReloadConfig(rc); err != nil {
		return fmt.Errorf("set raft's heartbeat timeout to %v: %w", rc.HeartbeatTimeout, err)
	}
	p.paced = paced
	return nil
}

// forward passes Raft's leadership changes from raw to out, setting the
// pace first, until done is closed.
func (p *pacer) forward(raw <-chan bool, out chan<- bool, done <-chan struct{}, failed func(error)) {
	for {
		select {
		case isLeader := <-raw:
			if err := p.set(isLeader); err != nil {
				failed(err)
			}
			select {
			case out <- isLeader:
			case <-done:
				return
			}
		case <-done:
			return
		}
	}
}
