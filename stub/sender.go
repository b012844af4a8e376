package stub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/outbox"
)

const (
	// senderBatch is how many events one look at the outbox reads.
	senderBatch = 1024
	// senderParallel bounds the deliveries in flight at once. Events
	// recorded while it is reached wait for a delivery to end and go
	// together in the next: under load a stub sends fewer, larger
	// requests, and an idle stub's event still goes at once.
	senderParallel = 2
	// senderBatchAttempts bounds the attempts whose events share one
	// request (POST /v1/children).
	senderBatchAttempts = 64
	// reportTimeout bounds one delivery.
	reportTimeout = 10 * time.Second
	minBackoff    = 100 * time.Millisecond
	maxBackoff    = 2 * time.Second
)

// sender delivers the outbox's events to the servers (POST /v1/children),
// in order per attempt, deleting each once a server has answered it.
//
// It is a pipeline, not a sequence of rounds: an event is handed to a
// delivery goroutine as soon as it is recorded unless an earlier event of
// the same attempt is still in flight, and events delivered meanwhile are
// removed from the outbox together in one transaction.
type sender struct {
	out     *outbox.Outbox
	servers *serverList
	log     *slog.Logger
	metrics *metrics
}

// delivery is the outcome of sending the events of some attempts.
type delivery struct {
	keys      []client.AttemptRef
	sent      []uint64 // seqs a server answered, in order
	attempted []uint64 // every seq handed to the goroutine
	ok        bool     // false when a server could not be reached
}

// run delivers events until ctx ends, then waits for its deliveries. It is
// woken by new events and by finished deliveries, and backs off (100 ms
// doubling to 2 s) while no server answers.
func (s *sender) run(ctx context.Context) {
	var (
		wg       sync.WaitGroup
		busy     = make(map[client.AttemptRef]bool)
		inflight = make(map[uint64]bool)
		running  int // deliveries in flight
		done     = make(chan delivery, senderParallel)
		backoff  = minBackoff
		retry    *time.Timer
		retryC   <-chan time.Time
	)
	defer wg.Wait()
	finish := func(d delivery) {
		running--
		for _, k := range d.keys {
			delete(busy, k)
		}
		for _, seq := range d.attempted {
			delete(inflight, seq)
		}
	}
	for {
		if retryC == nil {
			started, ok := s.start(ctx, &wg, busy, inflight, done, senderParallel-running)
			running += started
			if !ok {
				retry, retryC = time.NewTimer(backoff), nil
				retryC = retry.C
				backoff = min(2*backoff, maxBackoff)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.out.Wake():
			continue
		case <-retryC:
			retryC = nil
			continue
		case d := <-done:
			finished := []delivery{d}
		drain:
			for {
				select {
				case d := <-done:
					finished = append(finished, d)
				default:
					break drain
				}
			}
			var sent []uint64
			failed := false
			for _, d := range finished {
				sent = append(sent, d.sent...)
				failed = failed || !d.ok
			}
			if len(sent) > 0 {
				if err := s.out.Remove(sent...); err != nil && !errors.Is(err, outbox.ErrClosed) {
					s.log.Error("remove delivered events", "err", err)
				}
			}
			for _, d := range finished {
				finish(d)
			}
			if failed && retryC == nil {
				retry = time.NewTimer(backoff)
				retryC = retry.C
				backoff = min(2*backoff, maxBackoff)
			} else if !failed {
				backoff = minBackoff
			}
		}
		_ = retry
	}
}

// start hands the outbox's waiting events of attempts that have none in
// flight to at most slots delivery goroutines, up to senderBatchAttempts
// attempts each, and returns how many it started. ok is false when events
// wait but no server is known.
func (s *sender) start(ctx context.Context, wg *sync.WaitGroup, busy map[client.AttemptRef]bool, inflight map[uint64]bool, done chan<- delivery, slots int) (started int, ok bool) {
	if slots <= 0 {
		return 0, true
	}
	entries, err := s.out.Pending(senderBatch)
	if err != nil {
		if !errors.Is(err, outbox.ErrClosed) {
			s.log.Error("read outbox", "err", err)
		}
		return 0, false
	}
	var (
		order  []client.AttemptRef
		groups = make(map[client.AttemptRef][]outbox.Entry)
	)
	for _, e := range entries {
		if inflight[e.Seq] {
			continue
		}
		k := client.AttemptRef{JobID: e.Ev.JobID, Instance: e.Ev.Instance, Attempt: e.Ev.Attempt}
		if busy[k] {
			continue // an earlier event of this attempt is in flight
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	if len(order) == 0 {
		return 0, true
	}
	c := s.servers.client()
	if c == nil {
		s.log.Debug("no server known; events wait", "pending", len(entries))
		return 0, false
	}
	for ; len(order) > 0 && started < slots; started++ {
		n := min(len(order), senderBatchAttempts)
		keys := order[:n:n]
		order = order[n:]
		var es []outbox.Entry
		for _, k := range keys {
			busy[k] = true
			for _, e := range groups[k] {
				inflight[e.Seq] = true
				es = append(es, e)
			}
		}
		wg.Go(func() { done <- s.deliverBatch(ctx, c, keys, es) })
	}
	return started, true
}

// deliverBatch sends the events es of the attempts keys in one request
// (POST /v1/children), each attempt's in order. Should the server refuse
// the request as a whole (4xx: one event it cannot read, say), it sends
// them again one event per request, so that only such an event is
// dropped.
func (s *sender) deliverBatch(ctx context.Context, c *client.Client, keys []client.AttemptRef, es []outbox.Entry) delivery {
	d := delivery{keys: keys, ok: true}
	for _, e := range es {
		d.attempted = append(d.attempted, e.Seq)
	}
	evs := make([]client.ChildEvent, len(es))
	for i, e := range es {
		evs[i] = e.Ev
	}
	rctx, cancel := context.WithTimeout(ctx, reportTimeout)
	results, err := c.ReportChildren(rctx, evs)
	cancel()
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500:
		// The server refused the batch as a whole (one event it cannot
		// read, say): one by one, only such an event is dropped.
		s.log.Warn("server refused a batch of child events; sending them one by one", "events", len(es), "err", err)
	case err != nil:
		s.log.Debug("child events not delivered", "events", len(es), "err", err)
		d.ok = false
		return d
	default:
		for i, res := range results {
			e := es[i]
			switch {
			case res.Error != "":
				s.log.Error("server rejected child event; dropped", "kind", e.Ev.Kind, "job", e.Ev.JobID,
					"instance", e.Ev.Instance, "attempt", e.Ev.Attempt, "err", res.Error)
			case res.Stale:
				s.log.Debug("child event was stale", "kind", e.Ev.Kind, "job", e.Ev.JobID, "attempt", e.Ev.Attempt)
			}
			d.sent = append(d.sent, e.Seq)
			s.metrics.answered(s.out, e.Seq)
		}
		return d
	}
	for _, k := range keys {
		var mine []outbox.Entry
		for _, e := range es {
			if (client.AttemptRef{JobID: e.Ev.JobID, Instance: e.Ev.Instance, Attempt: e.Ev.Attempt}) == k {
				mine = append(mine, e)
			}
		}
		one := s.deliver(ctx, c, k, mine)
		d.sent = append(d.sent, one.sent...)
		if !one.ok {
			d.ok = false
		}
	}
	return d
}

// deliver sends one attempt's events in order, each as a batch of one
// (POST /v1/children), stopping at the first that no server took. An
// event the server refuses, as a request or as an event, is dropped.
func (s *sender) deliver(ctx context.Context, c *client.Client, k client.AttemptRef, es []outbox.Entry) delivery {
	d := delivery{keys: []client.AttemptRef{k}, ok: true}
	for _, e := range es {
		d.attempted = append(d.attempted, e.Seq)
	}
	for _, e := range es {
		rctx, cancel := context.WithTimeout(ctx, reportTimeout)
		results, err := c.ReportChildren(rctx, []client.ChildEvent{e.Ev})
		cancel()
		var apiErr *client.APIError
		switch {
		case errors.As(err, &apiErr):
			s.log.Error("server rejected child event; dropped", "kind", e.Ev.Kind, "job", e.Ev.JobID,
				"instance", e.Ev.Instance, "attempt", e.Ev.Attempt, "status", apiErr.Status, "err", err)
		case err != nil:
			s.log.Debug("child event not delivered", "kind", e.Ev.Kind, "job", e.Ev.JobID, "err", err)
			d.ok = false
			return d
		case results[0].Error != "":
			s.log.Error("server rejected child event; dropped", "kind", e.Ev.Kind, "job", e.Ev.JobID,
				"instance", e.Ev.Instance, "attempt", e.Ev.Attempt, "err", results[0].Error)
		case results[0].Stale:
			s.log.Debug("child event was stale", "kind", e.Ev.Kind, "job", e.Ev.JobID, "attempt", e.Ev.Attempt)
		}
		d.sent = append(d.sent, e.Seq)
		s.metrics.answered(s.out, e.Seq)
	}
	return d
}
