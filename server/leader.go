package server

import (
	"context"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/cron"
	"github.com/netmgr/netmgr/server/lease"
	"github.com/netmgr/netmgr/server/lease/expiry"
	"github.com/netmgr/netmgr/server/planner"
	"github.com/netmgr/netmgr/server/prime"
	"github.com/netmgr/netmgr/server/retention"
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
		case isLeader := <-s.node.LeaderCh():
			switch {
			case !isLeader && running != nil:
				running.stop()
				running = nil
				s.log.Info("leadership lost")
				s.gossip.setLeader(false)
			case isLeader && running == nil:
				s.log.Info("leadership won")
				running = s.startLeaderLoop()
				s.gossip.setLeader(true)
			}
		}
	}
}

// leaderRun is one term's leader loop.
type leaderRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startLeaderLoop runs leaderLoop in a goroutine until the run is stopped.
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

// leaderLoop runs the leader's duties until ctx ends. Every duty is one
// call below; the file that holds it is named beside it.
//
// Once, when the term begins:
//   - Barrier, so the FSM holds every entry committed by earlier leaders;
//     only then does the server answer consistent reads (s.ready).
//   - loadInitialDatabase (database.go): --database FILE, if the group
//     has never had a database.
//   - announceLeadership (leader.go): a LeaderElected event.
//   - mail.Sender.Run (server/mail), in its own goroutine: sends the pending
//     mail and commits MailSent for each outcome.
//   - commitNudge.run (commit_nudge.go), in its own goroutine: a Raft
//     barrier after the leader's last write, so followers learn its
//     commit without CommitTimeout's empty appends.
//   - leaderCheck.run (lease.go), in its own goroutine: confirms
//     leadership for lease renewals; with a fresh lease.Table (server/lease) it
//     is published in s.leader, where handleLease (http_lease.go) finds it.
//
// When gossip reports a change, and every leaderTick (at most every
// reconcileGapFor the pool: leader_pace.go):
//   - membership.Watcher.Reconcile (server/membership): StubJoin, StubLeave, AddVoter;
//     and, in the background, joining machines gossip lacks (server/rejoin).
//   - refreshGroupLevel (command_level.go): the newest command every
//     server applies.
//   - startFairShare (fairshare.go): FairShareStart, once every server
//     applies it.
//   - expireReservations (reservations.go): Unreserve past windows.
//   - sweepTokens (tokens.go): TokenRevoke of tokens expired a day ago.
//   - expiry.Keeper.Expire (server/lease/expiry): LeaseExpired for
//     machines that stopped renewing.
//   - retention.Expirer.Run (server/retention): at most every minute,
//     one JobsExpire removing the finished jobs past
//     --job-retention(-count).
//
// After every commit, and when the next cron firing is due:
//   - cron.Firer.Fire (server/cron): a CronFire for every cron job due,
//     from the committed state, so a firing the last leader committed is
//     not proposed again and one it did not is.
//
// After every commit, and when the next prime-time change is due:
//   - prime.Switcher.Switch (server/prime): a PrimeTimeSwitch for every
//     queue whose window opened or closed, from the committed state.
//
// After every commit, finished send, gossip change and tick:
//   - schedule (scheduler.go): one planner pass, committed as one Place.
//   - dispatch.Dispatcher.Dispatch (server/dispatch, made in
//     duty_handle.go): the Starts and Signals the database owes the
//     stubs.
//
// The loop returns, waiting for the goroutines its duties started, when
// ctx ends (leadership lost or the server stopping).
func (s *Server) leaderLoop(ctx context.Context) {
	if err := s.raft.Barrier(s.cfg.ApplyTimeout).Error(); err != nil {
		s.log.Error("leader barrier failed; stepping back", "err", err)
		return
	}
	s.ready.Store(true)
	defer s.ready.Store(false)
	s.loadInitialDatabase()
	s.announceLeadership()

	s.startMailSender(ctx)
	check := newLeaderCheck(func() error { return s.raft.VerifyLeader().Error() })
	checkDone := make(chan struct{})
	go func() {
		defer close(checkDone)
		check.run(ctx)
	}()
	defer func() { <-checkDone }()
	nudge := newCommitNudge(s.raft.LastIndex, func() error { return s.raft.Barrier(s.cfg.ApplyTimeout).Error() })
	nudgeDone := make(chan struct{})
	go func() {
		defer close(nudgeDone)
		nudge.run(ctx)
	}()
	defer func() { <-nudgeDone }()
	// The whole state again: a snapshot this server restored as a
	// follower re-arms the observer only at the next entry (fsm's
	// SetMachineObserver).
	s.fsm.SetMachineObserver(s.book.Observe)
	leases := lease.NewTable(time.Now(), s.book)
	facts := newJoinFacts()
	st := &leaderState{check: check, leases: leases, facts: facts, nudge: nudge}
	live := newLiveKeeper(s, st) // before the first renewal this term counts
	s.leader.Store(st)
	s.news.changed() // renewals held for a leader (lease_hold.go)
	defer func() {
		s.leader.Store(nil)
		s.news.changed()
	}()
	d := s.newDispatcher()
	defer d.Wait()
	m := s.newMembership(leases, facts)
	defer m.Wait()
	tick := time.NewTicker(leaderTick)
	defer tick.Stop()
	pace := newReconcilePace(reconcileGap)
	defer pace.stop()
	crons := cron.New(dutyHandle{s})
	leaseExpiry := expiry.New(dutyHandle{s}, s.metrics.leasesExpired)
	jobExpiry := retention.New(dutyHandle{s}, s.cfg.JobRetention, s.cfg.JobRetentionCount, leaderTick)
	cronTimer := time.NewTimer(time.Hour)
	defer cronTimer.Stop()
	primes := prime.New(dutyHandle{s})
	primeTimer := time.NewTimer(time.Hour)
	defer primeTimer.Stop()
	// Membership changes come from gossip; a committed command alone never
	// needs a reconcile, so the busy path skips it.
	reconcile := true
	plans := planner.NewCache()
	for {
		_, changed := s.fsm.Watch()
		if reconcile {
			pace.ran(time.Now())
			pace.fit(s.book.Pool().Size())
			if err := s.node.RefreshPace(); err != nil {
				s.log.Warn("set the leader's heartbeat pace", "err", err)
			}
			m.Reconcile(ctx)
			s.refreshGroupLevel()
			s.startFairShare()
			s.expireReservations(time.Now())
			s.sweepTokens(time.Now())
			leaseExpiry.Expire(leases, time.Now())
			jobExpiry.Run(time.Now())
		}
		if next := crons.Fire(time.Now()); !next.IsZero() {
			cronTimer.Reset(max(time.Until(next), 0))
		}
		if next := primes.Switch(time.Now()); !next.IsZero() {
			primeTimer.Reset(max(time.Until(next), 0))
		}
		if err := s.schedule(plans, live); err != nil {
			s.log.Warn("scheduling pass failed", "err", err)
		}
		d.Dispatch(ctx)
		reconcile = false
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-d.Done():
		case <-s.gossip.events:
			reconcile = pace.event(time.Now())
		case <-pace.C():
			pace.fired()
			reconcile = true
		case <-tick.C:
			// Paced too once the pool makes the gap longer than a tick;
			// below that every tick passes, as it always did.
			reconcile = pace.gap <= leaderTick || pace.event(time.Now())
		case <-cronTimer.C:
		case <-primeTimer.C:
		}
	}
}

// announceLeadership commits a LeaderElected event for this server's term.
// It is best effort: a failure costs only the event.
func (s *Server) announceLeadership() {
	term, _ := strconv.ParseUint(s.raft.Stats()["term"], 10, 64)
	// Informational only: a server too old to know the command skips it.
	res, err := s.apply(fsm.LeaderElectedType|fsm.IgnoreUnknownFlag, fsm.LeaderElected{At: time.Now().UTC(), Name: s.cfg.Name, Term: term})
	switch {
	case err != nil:
		s.log.Warn("record leader election failed", "err", err)
	case res.Err != nil:
		s.log.Warn("leader election refused", "err", res.Err)
	}
}
