package server

import (
	"context"
	"time"
)

// monitorLeadership starts the leader loop when this server wins an
// election and stops it, waiting for it, when leadership is lost.
func (s *Server) monitorLeadership() {
	var running *leaderRun
	defer func() { running.stop() }()
	for {
		select {
		case <-s.ctx.Done():
			return
		case isLeader := <-s.node.notify:
			switch {
			case !isLeader && running != nil:
				running.stop()
				running = nil
				s.log.Info("leadership lost")
			case isLeader && running == nil:
				s.log.Info("leadership won")
				running = s.startLeaderLoop()
			}
		}
	}
}

// leaderRun is one term's leader loop.
type leaderRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Server) startLeaderLoop() *leaderRun {
	ctx, cancel := context.WithCancel(s.ctx)
	r := &leaderRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		s.leaderLoop(ctx)
	}()
	return r
}

// stop ends the loop and waits for it; a nil run is already stopped.
func (r *leaderRun) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// leaderTick bounds how long the leader loop sleeps without an event: it
// retries failed dispatches and notices slow membership changes.
const leaderTick = 250 * time.Millisecond

// leaderLoop runs the leader's duties until ctx ends. It first issues a
// Barrier so the FSM holds every entry committed by earlier leaders, then
// rebuilds soft state from the database and, on every committed change,
// gossip event or tick: reconciles membership, schedules, dispatches.
func (s *Server) leaderLoop(ctx context.Context) {
	if err := s.raft.Barrier(s.cfg.ApplyTimeout).Error(); err != nil {
		s.log.Error("leader barrier failed; stepping back", "err", err)
		return
	}
	s.ready.Store(true)
	defer s.ready.Store(false)
	s.loadInitialDatabase()
	s.announceLeadership()

	check := newLeaderCheck(s)
	checkDone := make(chan struct{})
	go func() {
		defer close(checkDone)
		check.run(ctx)
	}()
	defer func() { <-checkDone }()
	leases := newLeaseTable(time.Now())
	s.leader.Store(&leaderState{check: check, leases: leases})
	defer s.leader.Store(nil)
	d := newDispatcher(s)
	defer d.wait()
	m := newMembership(s)
	defer m.wait()
	tick := time.NewTicker(leaderTick)
	defer tick.Stop()
	// Membership changes come from gossip; a committed command alone never
	// needs a reconcile, so the busy path skips it.
	reconcile := true
	for {
		_, changed := s.fsm.Watch()
		if reconcile {
			m.reconcile(ctx)
			s.refreshGroupLevel()
			s.expireReservations(time.Now())
			s.expireLeases(leases, time.Now())
		}
		if err := s.schedule(); err != nil {
			s.log.Warn("scheduling pass failed", "err", err)
		}
		d.dispatch(ctx)
		reconcile = false
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-d.done:
		case <-s.gossip.events:
			reconcile = true
		case <-tick.C:
			reconcile = true
		}
	}
}
