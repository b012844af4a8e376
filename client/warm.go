package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// warmTimeout bounds one server's answer in a round of warming
// (WithWarmConnections): a server that hangs costs the round this long.
// The first round comes within warmFirstWithin of the first renewal.
const (
	warmTimeout     = 2 * time.Second
	warmFirstWithin = 30 * time.Second
)

// WithWarmConnections makes RenewLease keep a connection open to every
// server the client lists, not only to the leader its renewals go to:
// about every period (between half and one and a half of it, at random;
// the first round at a random point of the first 30 s or the period, the
// shorter, so that a pool started at once does not warm in step) it sends
// GET /v1/health to each server but the known leader, one at a time. That
// opens a connection where there was none (or it broke) and keeps an open
// one from being closed as idle if the transport's idle timeout is longer
// than one and a half periods; with none, connections stay open between
// rounds.
//
// When the leader dies, every renewal goes to the survivors and then to
// the new leader at once; over TLS, without a connection there, each
// would cost a handshake (about 1.2 ms of CPU for both ends) while the
// survivors hold an election: at 1,000 simulated machines, each survivor
// accepted 1,001-1,013 connections within seconds, and 2-10 with the
// connections warm (doc/benchmark.md). The price is a connection per
// server and machine, and a request per period each. With a lease stream
// (WithLeaseStream), a round keeps one open with each of those servers
// instead, for when it leads (lease_standby.go), and asks for health only
// where it could not.
func WithWarmConnections(every time.Duration) Option {
	return func(c *Client) { c.warm = &warmth{every: every} }
}

// warmth is the state of a client's warming (WithWarmConnections).
type warmth struct {
	every time.Duration

	mu      sync.Mutex // guards the fields below
	due     time.Time  // the next round's time; zero before the first renewal
	running bool
	stop    context.CancelFunc // ends the running round
}

// keepWarm starts a round of warming, in the background, if one is due
// and none runs.
func (c *Client) keepWarm() {
	w := c.warm
	if w == nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.due.IsZero() {
		w.due = now.Add(rand.N(min(w.every, warmFirstWithin)))
	}
	if w.running || now.Before(w.due) {
		return
	}
	w.due = now.Add(w.every/2 + rand.N(w.every))
	ctx, cancel := context.WithCancel(context.Background())
	w.running, w.stop = true, cancel
	go c.warmRound(ctx)
}

// warmRound asks each server but the known leader for its health, which
// reuses the connection to it or makes one.
func (c *Client) warmRound(ctx context.Context) {
	defer func() {
		c.warm.mu.Lock()
		c.warm.running = false
		c.warm.stop()
		c.warm.mu.Unlock()
	}()
	c.mu.Lock()
	addrs, leader := slices.Clone(c.addrs), -1
	if c.leaderKnown {
		leader = c.preferred
	}
	c.mu.Unlock()
	for i, a := range addrs {
		if i == leader {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, warmTimeout)
		// A lease stream waiting there for a leader change
		// (lease_standby.go) does the connection's work: the renewals
		// go on it when the server leads.
		if !c.waitWith(tctx, a) {
			_, _ = c.try(tctx, http.MethodGet, a+"/v1/health", nil, nil)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// stopWarming ends the running round of warming, if any, and lets the
// next renewal begin the count to the first round again.
func (c *Client) stopWarming() {
	w := c.warm
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	w.due = time.Time{}
}
