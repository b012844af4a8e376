package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// leaseStreamOpenWithin bounds a stream's opening once the renewal that
// began it has gone on by a plain request: the upgrade's own bound.
const leaseStreamOpenWithin = upgradeTimeout

// errStreamOpening is a renewal that did not wait for its stream's
// opening past its patience: the opening goes on in the background.
var errStreamOpening = errors.New("lease stream: still opening")

// pendingOpen is one stream's opening, handed to the renewal that began
// it, or, once that renewal stopped waiting, kept as a waiting stream.
type pendingOpen struct {
	mu     sync.Mutex // guards the fields below
	done   bool
	s      *leaseStream
	err    error
	gone   bool          // the renewal stopped waiting
	opened chan struct{} // closed when done
}

// openPatiently opens a lease stream with the server at base for a
// renewal, which waits for it at most its patience, as before; under
// ls.mu. A handshake that takes longer is not given up: the renewal goes
// by a plain request (errStreamOpening) while the opening goes on for up
// to leaseStreamOpenWithin, and a stream that opens is kept waiting with
// its server (keepStandby), for the next renewal to take. A server
// starved of CPU after an outage otherwise did each of the pool's
// handshakes to the end only to find its stub gone, and did it again
// for the next renewal's (at 5,000 simulated machines, 50-500 such
// handshakes a second on each server while the group elected).
func (c *Client) openPatiently(ctx context.Context, base string) (*leaseStream, error) {
	ls := c.leases
	if ls.opening[base] {
		return nil, errStreamOpening
	}
	if ls.opens == nil {
		ls.opens, ls.stopOpens = context.WithCancel(context.Background())
	}
	if ls.opening == nil {
		ls.opening = make(map[string]bool)
	}
	ls.opening[base] = true
	p := &pendingOpen{opened: make(chan struct{})}
	go c.finishOpen(ls.opens, base, p)

	wait := time.NewTimer(c.streamPatience(ctx))
	defer wait.Stop()
	select {
	case <-p.opened:
	case <-wait.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.gone = true
		return nil, fmt.Errorf("open lease stream %s: %w", base, errStreamOpening)
	}
	delete(ls.opening, base)
	return p.s, p.err
}

// finishOpen opens the stream for p and hands it over: to the renewal
// waiting for it, or, once that stopped waiting, to the waiting streams,
// unless the client closed its streams meanwhile or another stream is
// kept with base.
func (c *Client) finishOpen(opens context.Context, base string, p *pendingOpen) {
	s, err := c.openLeaseStream(opens, base, leaseStreamOpenWithin)
	p.mu.Lock()
	if !p.gone {
		p.s, p.err, p.done = s, err, true
		close(p.opened)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	ls := c.leases
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if opens.Err() == nil {
		delete(ls.opening, base)
	}
	if err != nil {
		return
	}
	if opens.Err() != nil || ls.standby[base] != nil || (ls.cur != nil && ls.cur.base == base) {
		s.close()
		return
	}
	ls.keepStandby(s)
}
