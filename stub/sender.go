package stub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
)

const (
	// senderBatch is how many events one round of the sender reads.
	senderBatch = 1024
	// senderParallel bounds the attempts whose events are in flight at once.
	senderParallel = 16
	// reportTimeout bounds one delivery.
	reportTimeout = 10 * time.Second
	minBackoff    = 100 * time.Millisecond
	maxBackoff    = 2 * time.Second
)

// sender delivers the outbox's events to the servers, in order per attempt,
// deleting each once a server has answered it.
type sender struct {
	out     *outbox
	servers *serverList
	log     *slog.Logger
}

// run delivers events until ctx ends. It is woken at once by new events
// and backs off (100 ms doubling to 2 s) while no server answers.
func (s *sender) run(ctx context.Context) {
	backoff := minBackoff
	for {
		more, ok := s.round(ctx)
		if ctx.Err() != nil {
			return
		}
		var timer *time.Timer
		var wait <-chan time.Time
		switch {
		case ok && more:
			backoff = minBackoff
			continue
		case ok:
			backoff = minBackoff // idle until woken
		default:
			timer = time.NewTimer(backoff)
			wait = timer.C
			backoff = min(2*backoff, maxBackoff)
		}
		select {
		case <-ctx.Done():
		case <-s.out.wake:
		case <-wait:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// round tries to deliver what the outbox holds. ok is false when something
// could not be delivered; more is true when the outbox may hold more.
func (s *sender) round(ctx context.Context) (more, ok bool) {
	entries, err := s.out.pending(senderBatch)
	if err != nil {
		if !errors.Is(err, errOutboxClosed) {
			s.log.Error("read outbox", "err", err)
		}
		return false, false
	}
	if len(entries) == 0 {
		return false, true
	}
	c := s.servers.client()
	if c == nil {
		s.log.Debug("no server known; events wait", "pending", len(entries))
		return false, false
	}

	// Group by attempt, keeping each attempt's events in outbox order.
	var order []attemptKey
	groups := make(map[attemptKey][]entry)
	for _, e := range entries {
		k := attemptKey{JobID: e.ev.JobID, Instance: e.ev.Instance, Attempt: e.ev.Attempt}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}

	var failed atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, senderParallel)
	for _, k := range order {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if !s.deliver(ctx, c, groups[k]) {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	return len(entries) == senderBatch, !failed.Load()
}

// deliver sends one attempt's events in order, stopping at the first that
// no server took.
func (s *sender) deliver(ctx context.Context, c *client.Client, es []entry) bool {
	for _, e := range es {
		rctx, cancel := context.WithTimeout(ctx, reportTimeout)
		resp, err := c.ReportChild(rctx, e.ev)
		cancel()
		var apiErr *client.APIError
		switch {
		case errors.As(err, &apiErr):
			s.log.Error("server rejected child event; dropped", "kind", e.ev.Kind, "job", e.ev.JobID,
				"instance", e.ev.Instance, "attempt", e.ev.Attempt, "status", apiErr.Status, "err", err)
		case err != nil:
			s.log.Debug("child event not delivered", "kind", e.ev.Kind, "job", e.ev.JobID, "err", err)
			return false
		case resp.Stale:
			s.log.Debug("child event was stale", "kind", e.ev.Kind, "job", e.ev.JobID, "attempt", e.ev.Attempt)
		}
		if err := s.out.remove(e.seq); err != nil {
			if !errors.Is(err, errOutboxClosed) {
				s.log.Error("remove delivered event", "err", err)
			}
			return false
		}
	}
	return true
}
