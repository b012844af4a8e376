package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// WithHedge makes each round of a request start on the preferred server
// and, when that has not answered within after, start on the next server
// too while the first goes on, and so on (a "hedged request"). A try that
// fails starts the next one at once. The first answer wins and the others
// are cancelled. A server cut off by a partition, which hangs rather than
// refuses, then costs only after, while a live leader that is slow under
// load keeps the whole round to answer in: a per-try timeout
// (WithTryTimeout) cannot give both.
//
// Only idempotent requests may be hedged: a server may act on a request
// whose answer lost the race.
func WithHedge(after time.Duration) Option { return func(c *Client) { c.hedge = after } }

// WithLeaderPatience makes a hedged round (WithHedge) that starts on the
// leader, as the last answer named it (LeaderHeader) or SetLeader hinted
// it, wait d rather than the hedge delay before it asks the next server
// too; the servers after that follow at the hedge delay. A follower only
// forwards to the leader, so asking one while the leader is merely slow
// adds a hop and, over TLS, a connection (a handshake) to each follower:
// when a whole pool of stubs starts at once and the leader is slow for a
// while, that is a handshake per stub and follower, and the CPU they take
// slows the leader further. A leader that fails outright, or that hangs
// behind a partition, costs no more than d. Zero (the default) waits the
// hedge delay.
func WithLeaderPatience(d time.Duration) Option { return func(c *Client) { c.patience = d } }

// patienceKey carries a request's leader patience (WithPatience).
type patienceKey struct{}

// WithPatience returns ctx carrying a leader patience for the requests
// made with it, in place of the client's (WithLeaderPatience): a stub
// that renews less often, with a longer lease, has longer to wait for
// its leader before it asks the others.
func WithPatience(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, patienceKey{}, d)
}

// patienceFor is the leader patience of a request made with ctx.
func (c *Client) patienceFor(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(patienceKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return c.patience
}

// tryResult is one hedged try's outcome: the index of its server, the
// leader its answer named, and its body, undecoded.
type tryResult struct {
	n      int
	leader string
	raw    json.RawMessage
	err    error
}

// hedged is sequentialRound's counterpart for a client WithHedge.
func (c *Client) hedged(ctx context.Context, method, path string, body []byte, addrs []string, start int, leader bool, out any, clock *retryClock) (done bool, err error) {
	r := c.hedgedRound(ctx, method, path, body, addrs, start, leader, out, clock)
	var apiErr *APIError
	switch {
	case r.err == nil:
		c.answered(addrs, r.n, r.leader)
		if out != nil {
			if err := json.Unmarshal(r.raw, out); err != nil {
				return true, fmt.Errorf("decode answer of %s: %w", addrs[r.n]+path, err)
			}
		}
		return true, nil
	case errors.As(r.err, &apiErr) || ctx.Err() != nil:
		return true, r.err
	}
	return false, r.err
}

// hedgedRound sends one round of a request to addrs, starting with index
// start, as WithHedge says; leader says that server start is the leader,
// which gets the leader patience (WithLeaderPatience). It returns the
// winning try, or the last failure when every server failed or ctx ended;
// it marks each server that failed so that later requests prefer the next
// one.
func (c *Client) hedgedRound(ctx context.Context, method, path string, body []byte, addrs []string, start int, leader bool, out any, clock *retryClock) tryResult {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan tryResult, len(addrs))
	launched, pending := 0, 0
	launch := func() {
		n := (start + launched) % len(addrs)
		launched++
		pending++
		go func() {
			tctx, tcancel := rctx, context.CancelFunc(func() {})
			if c.tryTimeout > 0 {
				tctx, tcancel = context.WithTimeout(rctx, c.tryTimeout)
			}
			defer tcancel()
			r := tryResult{n: n}
			var dst any
			if out != nil {
				dst = &r.raw
			}
			r.leader, r.err = c.try(tctx, method, addrs[n]+path, body, dst)
			results <- r
		}()
	}
	launch()
	first := c.hedge
	if p := c.patienceFor(ctx); leader && p > first {
		first = p
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	last := tryResult{n: start, err: fmt.Errorf("%s %s: no server tried", method, path)}
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			var apiErr *APIError
			var th *throttled
			if r.err == nil || errors.As(r.err, &apiErr) || errors.As(r.err, &th) || ctx.Err() != nil {
				return r // a 429 is waited out by the caller, at the same server
			}
			last = r
			clock.failed(r.err)
			c.skip(r.n, len(addrs))
			if launched < len(addrs) {
				launch()
				timer.Reset(c.hedge)
			}
		case <-timer.C:
			if launched < len(addrs) {
				launch()
				timer.Reset(c.hedge)
			}
		}
	}
	return last
}

// skip makes the server after n the preferred one, if n was: n failed.
func (c *Client) skip(n, count int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.preferred == n {
		c.preferred, c.leaderKnown = (n+1)%count, false
	}
}
