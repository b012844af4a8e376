package server

import (
	"maps"
	"slices"
	"time"

	"github.com/netmgr/netmgr/server/planner"
)

// liveKeeper keeps the planner's liveness of every gossip member between
// the leader's passes, so that a pass over 10,000 machines does not
// first build a map of all of them (BenchmarkLiveness10k: 4.9 ms, where
// the pass itself takes under 1). It learns what may have changed from
// gossip (the members updated: takeChanged) and from the lease table
// (loads, own loads and idle times reported, and silences that crossed
// lease.Table.SuspectAfter: lease.Table.Changes), recomputes those members'
// livenessOf, and hands the planner's Cache the names it recomputed
// since the last pass (planner.Cache.PassChanged). Members whose owners
// are watched are recomputed every time: their idle minutes grow with
// the clock. The first look of a term, and the one once the term is
// older than lease.Table.SuspectAfter, recompute every member. TestLiveKeeper holds
// it to Server.liveness over random renewals, gossip and time.
//
// Only the leader loop's goroutine uses it, one per term.
type liveKeeper struct {
	s  *Server
	st *leaderState
	// live is every member's liveness as of the last refresh; pending
	// are the names refreshed since the last take, all when every one
	// was.
	live    map[string]planner.Liveness
	pending map[string]struct{}
	all     bool
}

// newLiveKeeper starts keeping liveness for the leadership st, whose
// lease table it has record what changes.
func newLiveKeeper(s *Server, st *leaderState) *liveKeeper {
	st.leases.TrackChanges()
	return &liveKeeper{s: s, st: st, pending: make(map[string]struct{}), all: true}
}

// refresh brings live up to now. The leader loop calls it on every turn,
// passing or not, so that what the lease table records stays small.
func (k *liveKeeper) refresh(now time.Time) {
	names, all := k.st.leases.Changes(now)
	members := k.s.gossip.takeChanged()
	if all || k.live == nil {
		k.live = k.s.liveness(now)
		k.all = true
		clear(k.pending)
		return
	}
	for _, list := range [][]string{names, members, k.st.leases.IdleMachines()} {
		for _, name := range list {
			if g, ok := k.s.gossip.member(name); ok {
				k.live[name] = livenessOf(name, g, k.st, now)
			} else {
				delete(k.live, name)
			}
			if !k.all {
				k.pending[name] = struct{}{}
			}
		}
	}
}

// take returns every member's liveness and the names whose liveness may
// have changed since the last take (all: any may have), and starts
// counting afresh. The map is the keeper's: read it during the pass only.
func (k *liveKeeper) take() (live map[string]planner.Liveness, changed []string, all bool) {
	all = k.all
	if !all {
		changed = slices.Collect(maps.Keys(k.pending))
	}
	clear(k.pending)
	k.all = false
	return k.live, changed, all
}
