package server

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Joining the machines' gossip pool again. A server restarted after its
// stubs' memberlist gave it up starts in a pool of its own: the stubs no
// longer gossip to it, and it knows none of them. Each stub joins its
// --join addresses and the servers it has seen while it sees no server
// (stub/rejoin.go); the leader joins from its side the machines the
// database holds and its gossip does not, so that the pools merge however
// the servers came back (at new addresses too) and as soon as it leads.
// The database holds each machine's API address, not its gossip address:
// the leader asks the stub there (GET /v1/facts) for the gossip address.
const (
	// rejoinBatch is how many machines one round tries: one answer merges
	// the pools, and memberlist's state exchange then brings in every
	// member of the other pool at once.
	rejoinBatch = 3
	// rejoinFirst is the pause before a machine is tried again after its
	// first try; each further failure doubles it, up to rejoinMax (a
	// machine that is gone for good costs one request per rejoinMax).
	rejoinFirst = time.Second
	rejoinMax   = 30 * time.Second
	// rejoinFactsTimeout bounds asking a stub for its gossip address.
	rejoinFactsTimeout = 2 * time.Second
)

// rejoiner is the leader's side of joining the pools again: it tries, one
// round at a time, a few of the machines that the database holds and
// gossip does not, each with its own backoff. Its methods are safe for
// concurrent use; a round runs in a goroutine that wait waits for.
type rejoiner struct {
	s  *Server
	wg sync.WaitGroup

	mu      sync.Mutex // guards running and tries
	running bool
	tries   map[string]rejoinTry // by machine; only machines gossip lacks
}

// rejoinTry is when a machine may be tried next, and the pause after that.
type rejoinTry struct {
	next  time.Time
	pause time.Duration
}

func newRejoiner(s *Server) *rejoiner {
	return &rejoiner{s: s, tries: make(map[string]rejoinTry)}
}

// unseenMachines returns the API address of every machine of the
// database, whatever its state, that gossip does not hold alive: not in
// pool, or failed or gone there.
func unseenMachines(v fsm.View, pool map[string]member) map[string]string {
	out := make(map[string]string)
	for _, mc := range v.Machines() {
		if mem, ok := pool[mc.Name]; ok && mem.Alive && mem.Meta.Role == client.RoleStub {
			continue
		}
		if mc.Addr != "" {
			out[mc.Name] = mc.Addr
		}
	}
	return out
}

// kick starts a round over the machines of unseen (name -> API address)
// that are due, unless one runs. It does not block. A machine no longer
// unseen loses its backoff.
func (r *rejoiner) kick(ctx context.Context, unseen map[string]string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.tries {
		if _, ok := unseen[name]; !ok {
			delete(r.tries, name)
		}
	}
	if r.running {
		return
	}
	var due []string
	for name := range unseen {
		if !now.Before(r.tries[name].next) {
			due = append(due, name)
		}
	}
	if len(due) == 0 {
		return
	}
	rand.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	due = due[:min(len(due), rejoinBatch)]
	for _, name := range due {
		t := r.tries[name]
		t.pause = min(max(2*t.pause, rejoinFirst), rejoinMax)
		t.next = now.Add(t.pause)
		r.tries[name] = t
	}
	r.running = true
	r.wg.Go(func() {
		defer func() {
			r.mu.Lock()
			r.running = false
			r.mu.Unlock()
		}()
		var wg sync.WaitGroup
		for _, name := range due {
			wg.Go(func() { r.try(ctx, name, unseen[name]) })
		}
		wg.Wait()
	})
}

// try asks the stub at addr for its gossip address and joins it, unless
// the stub there is another machine.
func (r *rejoiner) try(ctx context.Context, name, addr string) {
	c, err := r.s.stubClient(name, addr)
	if err != nil {
		r.s.log.Debug("stub address unusable", "machine", name, "addr", addr, "err", err)
		return
	}
	fctx, cancel := context.WithTimeout(ctx, rejoinFactsTimeout)
	facts, err := c.Facts(fctx)
	cancel()
	switch {
	case err != nil:
		r.s.log.Debug("machine not in the gossip pool does not answer", "machine", name, "addr", addr, "err", err)
		return
	case facts.Name != name:
		// The address was reused by another machine: joining it would
		// merge whatever pool that one is in.
		r.s.log.Debug("machine's address answers as another machine", "machine", name, "addr", addr, "answers", facts.Name)
		return
	case facts.GossipAddr == "":
		r.s.log.Debug("machine not in the gossip pool names no gossip address", "machine", name, "addr", addr)
		return
	}
	// memberlist's Join cannot be cancelled; its TCP timeout bounds it.
	if n, err := r.s.gossip.ml.Join([]string{facts.GossipAddr}); n == 0 {
		r.s.log.Debug("join machine's gossip failed", "machine", name, "gossip", facts.GossipAddr, "err", err)
		return
	}
	r.s.log.Info("joined the gossip pool of a machine it did not see", "machine", name, "gossip", facts.GossipAddr,
		"members", r.s.gossip.ml.NumMembers())
}

// wait blocks until the round in progress, if any, has returned.
func (r *rejoiner) wait() { r.wg.Wait() }
