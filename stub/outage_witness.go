package stub

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// witnessParallel bounds the statement requests of one round in flight.
const witnessParallel = 64

// witnessGap is the least time between the starts of two rounds: every
// stub in an outage asks every outageAskEvery, and the requests that
// arrive meanwhile share the next round, so a pool of n stubs costs the
// witness n requests per gap, not n per ask.
const witnessGap = outageAskEvery

// witnessRounds runs outage witness rounds, one at a time, each shared by
// every request waiting for a round begun after it arrived.
type witnessRounds struct {
	o    *outage
	kick chan struct{} // cap 1: a waiter wants a new round

	mu      sync.Mutex    // guards the fields below
	began   time.Duration // boot time the last finished round began; -1 before any
	result  witnessResult
	changed chan struct{}
}

// witnessResult is what one round found: the statements of every stub it
// asked, in a pool of at most the fan-out, and their tally in any pool.
type witnessResult struct {
	sts   []client.OutageStatement
	tally client.OutageTally
}

func newWitnessRounds(o *outage) *witnessRounds {
	return &witnessRounds{o: o, kick: make(chan struct{}, 1), began: -1, changed: make(chan struct{})}
}

// run serves rounds until ctx ends.
func (w *witnessRounds) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		w.mu.Lock()
		last := w.began
		w.mu.Unlock()
		if wait := last + witnessGap - supervisor.BootNow(); last >= 0 && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		began := supervisor.BootNow()
		res := w.round(ctx)
		w.mu.Lock()
		w.began, w.result = began, res
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

// after waits for a round that began at or after boot time t and returns
// what it found.
func (w *witnessRounds) after(ctx context.Context, t time.Duration) (witnessResult, error) {
	for {
		w.mu.Lock()
		ok, sts, changed := w.began >= t, w.result, w.changed
		w.mu.Unlock()
		if ok {
			return sts, nil
		}
		select {
		case w.kick <- struct{}{}:
		default:
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return witnessResult{}, fmt.Errorf("outage witness round: %w", ctx.Err())
		}
	}
}

// round asks every stub in gossip for its statement, within
// client.OutageAnswerWithin, in a pool of at most the fan-out; this stub
// answers for itself, and stubs that do not answer in time are left out.
// In a larger pool the pool's witness (the first stub in name order, or
// the second) tallies it range by range, within half that, so that the
// answer reaches a stub that asked through the first stub of its range in
// time; any other stub passes the question on to the witness.
func (w *witnessRounds) round(ctx context.Context) witnessResult {
	o := w.o
	names := o.peers.withSelf(o.self)
	if len(names) <= o.fanOut {
		ctx, cancel := context.WithTimeout(ctx, client.OutageAnswerWithin)
		defer cancel()
		sts := o.statements(ctx, names)
		return witnessResult{sts: sts, tally: tallyOf(sts)}
	}
	heads := names[:outageWitnessesTried]
	for _, h := range heads {
		if h.name == o.self {
			ctx, cancel := context.WithTimeout(ctx, client.OutageAnswerWithin/2)
			defer cancel()
			return witnessResult{tally: o.tally(ctx, names)}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, client.OutageAnswerWithin)
	defer cancel()
	res, _ := o.askWitnesses(ctx, heads, supervisor.BootNow())
	return res
}
