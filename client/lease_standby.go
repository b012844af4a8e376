package client

import (
	"context"
	"slices"
	"time"
)

// Waiting lease streams. A client that renews on a lease stream
// (WithLeaseStream) and keeps its connections warm (WithWarmConnections)
// also keeps a stream open with each server that does not lead, opened
// in its warming rounds and otherwise idle: a server takes a stream
// whether or not it leads, answers a renewal 503 while it does not, and
// grants them once it does. When the leader dies, a stub's renewals go by
// a plain request until one names the new leader, and from the next one
// on the stream that waited with it: no stub opens a connection to the
// new leader in its first seconds, and no renewal is forwarded between
// the servers after the first. Without them, 2,000 simulated machines
// whose leader was killed brought the new leader 5,000-8,400 connections
// and a second of plain renewals each, and its follower, forwarding
// them, went silent past Raft's leader lease (doc/benchmark.md). The
// price is a connection and an idle goroutine per server and machine,
// on both ends.

// keepStandby keeps s open with its server for when it leads again,
// unless one is kept there already; under ls.mu. A stream that owes an
// answer (a renewal held through an election outlasted the round) is
// kept too: the next renewal on it reads that answer first.
func (ls *leaseStreams) keepStandby(s *leaseStream) {
	if kept := ls.standby[s.base]; kept == s {
		return
	} else if kept != nil {
		s.close()
		return
	}
	if ls.standby == nil {
		ls.standby = make(map[string]*leaseStream)
	}
	ls.standby[s.base] = s
}

// takeStandby returns the stream waiting open with the server at base,
// no longer waiting, or nil if none is or it ended; under ls.mu.
func (ls *leaseStreams) takeStandby(base string) *leaseStream {
	s := ls.standby[base]
	if s == nil {
		return nil
	}
	delete(ls.standby, base)
	if s.ended() {
		s.close()
		return nil
	}
	return s
}

// ended reports whether a waiting stream has ended: its server stopped,
// or dropped it. Anything read on one that owes no answer is the error
// that ended it; on one that owes one, the answer is kept for the next
// renewal to read.
func (s *leaseStream) ended() bool {
	select {
	case r := <-s.answers:
		s.answers <- r
		return r.err != nil || !s.owed
	default:
		return false
	}
}

// waitWith keeps a stream open with the server at base to wait for it
// to lead, opening one unless one waits there already, and reports
// whether one does (false when the client takes no stream, when the
// stream with base carries the renewals, or when none could be opened);
// a warming round (warm.go) calls it for each server but the leader. A
// stream that ended is dropped and opened again.
func (c *Client) waitWith(ctx context.Context, base string) bool {
	ls := c.leases
	if ls == nil {
		return false
	}
	ls.mu.Lock()
	if s := ls.standby[base]; s != nil && s.ended() {
		s.close()
		delete(ls.standby, base)
	}
	have := ls.standby[base] != nil
	skip := have || !ls.offered || (ls.cur != nil && ls.cur.base == base) || ls.opening[base]
	ls.mu.Unlock()
	if skip {
		return have
	}
	// Its round bounds the opening (warmTimeout), not the renewals'
	// patience: a waiting stream is no renewal's business, and one given
	// up on mid-handshake costs its server the handshake for nothing.
	s, err := c.openLeaseStream(ctx, base, warmTimeout)
	if err != nil {
		return false // the next round tries again
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	// The round's context ends before CloseLeaseStream takes the lock.
	if ctx.Err() != nil || ls.standby[base] != nil || (ls.cur != nil && ls.cur.base == base) {
		s.close()
		return ls.standby[base] != nil
	}
	ls.keepStandby(s)
	return true
}

// failOverTries bounds the streams one renewal tries: the leader's (or
// another's, when it failed), and the one of the leader a 503 names.
const failOverTries = 3

// failOverPatience is how long a renewal waits on a stream that may be
// held for an election (a server that knows of no leader holds it up to
// 0.8 s): what is left of ctx, less a tenth of a second for the plain
// request that follows a failure, and never less than patience.
func failOverPatience(ctx context.Context, patience time.Duration) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return max(time.Until(deadline)-100*time.Millisecond, patience)
	}
	return patience
}

// takeAnyStandby returns one of the streams waiting open but the one
// with the server at except, no longer waiting, or nil if none is; under
// ls.mu. Which one is left to the map's order, so that a pool whose
// leader died spreads over the survivors.
func (ls *leaseStreams) takeAnyStandby(except string) *leaseStream {
	for base := range ls.standby {
		if base == except {
			continue
		}
		if s := ls.takeStandby(base); s != nil {
			return s
		}
	}
	return nil
}

// leaderIs makes the server at base, which just granted a renewal, the
// one the client knows as the leader.
func (c *Client) leaderIs(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := slices.Index(c.addrs, base); k >= 0 {
		c.preferred, c.leaderKnown = k, true
	}
}

// failedLately reports whether the stream with the server at base failed
// less than leaseStreamRetry ago; under ls.mu. A server that names it
// the leader then has not yet noticed it die (Raft's heartbeat timeout).
func (ls *leaseStreams) failedLately(base string) bool {
	return ls.failed == base && time.Since(ls.failedAt) < leaseStreamRetry
}
