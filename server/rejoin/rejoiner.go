package rejoin

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
)

// The pacing of rejoins.
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

// Config is what a Rejoiner needs of its server.
type Config struct {
	// StubClient returns a client for the stub of machine at addr.
	StubClient func(machine, addr string) (*client.StubClient, error)
	// Join joins this server's gossip node to the nodes at addrs and
	// says how many it reached (memberlist's Join).
	Join func(addrs []string) (int, error)
	// Members is how many members this server's gossip pool holds now.
	Members func() int
}

// Rejoiner is the leader's side of joining the pools again: it tries, one
// round at a time, a few of the machines that the database holds and
// gossip does not, each with its own backoff. Its methods are safe for
// concurrent use; a round runs in a goroutine that Wait waits for.
type Rejoiner struct {
	log *slog.Logger
	cfg Config
	wg  sync.WaitGroup

	mu      sync.Mutex // guards running and tries
	running bool
	tries   map[string]rejoinTry // by machine; only machines gossip lacks
}

// rejoinTry is when a machine may be tried next, and the pause after that.
type rejoinTry struct {
	next  time.Time
	pause time.Duration
}

// New returns a leader term's rejoiner, logging to log.
func New(log *slog.Logger, cfg Config) *Rejoiner {
	return &Rejoiner{log: log, cfg: cfg, tries: make(map[string]rejoinTry)}
}

// Kick starts a round over the machines of unseen (name -> API address)
// that are due, unless one runs. It does not block. A machine no longer
// unseen loses its backoff.
func (r *Rejoiner) Kick(ctx context.Context, unseen map[string]string, now time.Time) {
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
func (r *Rejoiner) try(ctx context.Context, name, addr string) {
	c, err := r.cfg.StubClient(name, addr)
	if err != nil {
		r.log.Debug("stub address unusable", "machine", name, "addr", addr, "err", err)
		return
	}
	fctx, cancel := context.WithTimeout(ctx, rejoinFactsTimeout)
	facts, err := c.Facts(fctx)
	cancel()
	switch {
	case err != nil:
		r.log.Debug("machine not in the gossip pool does not answer", "machine", name, "addr", addr, "err", err)
		return
	case facts.Name != name:
		// The address was reused by another machine: joining it would
		// merge whatever pool that one is in.
		r.log.Debug("machine's address answers as another machine", "machine", name, "addr", addr, "answers", facts.Name)
		return
	case facts.GossipAddr == "":
		r.log.Debug("machine not in the gossip pool names no gossip address", "machine", name, "addr", addr)
		return
	}
	// memberlist's Join cannot be cancelled; its TCP timeout bounds it.
	if n, err := r.cfg.Join([]string{facts.GossipAddr}); n == 0 {
		r.log.Debug("join machine's gossip failed", "machine", name, "gossip", facts.GossipAddr, "err", err)
		return
	}
	r.log.Info("joined the gossip pool of a machine it did not see", "machine", name, "gossip", facts.GossipAddr,
		"members", r.cfg.Members())
}

// Wait blocks until the round in progress, if any, has returned.
func (r *Rejoiner) Wait() { r.wg.Wait() }
