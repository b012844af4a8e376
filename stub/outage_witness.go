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
	result  []client.OutageStatement
	changed chan struct{}
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
		rctx, cancel := context.WithTimeout(ctx, client.OutageAnswerWithin)
		sts := w.round(rctx)
		cancel()
		w.mu.Lock()
		w.began, w.result = began, sts
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

// after waits for a round that began at or after boot time t and returns
// its statements.
func (w *witnessRounds) after(ctx context.Context, t time.Duration) ([]client.OutageStatement, error) {
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
			return nil, fmt.Errorf("outage witness round: %w", ctx.Err())
		}
	}
}

// round asks every stub in gossip for its statement; this stub answers
// for itself. Stubs that do not answer in time are left out.
func (w *witnessRounds) round(ctx context.Context) []client.OutageStatement {
	peers := w.o.peers.sorted()
	var (
		mu  sync.Mutex
		out = []client.OutageStatement{w.o.statement()}
		wg  sync.WaitGroup
		sem = make(chan struct{}, witnessParallel)
	)
	for _, p := range peers {
		if p.name == w.o.self {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := p.c.OutageStatement(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			out = append(out, st)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
