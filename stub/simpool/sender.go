package simpool

import (
	"context"
	"errors"
	"time"

	"github.com/netmgr/netmgr/client"
)

// Delivery as the stub's sender does it (stub/sender.go), in memory.
const (
	senderBatch   = 128 // events per POST /v1/children
	reportTimeout = 10 * time.Second
	minBackoff    = 100 * time.Millisecond
	maxBackoff    = 2 * time.Second
)

// queueLocked adds ev to the outbox and starts the sender when none runs.
// m.mu is held.
func (m *Machine) queueLocked(ev client.ChildEvent) {
	m.outbox = append(m.outbox, ev)
	if !m.sending {
		m.sending = true
		m.pool.wg.Go(m.sendEvents)
	}
}

// sendEvents delivers the outbox to the servers (POST /v1/children) until
// it is empty: one request at a time, so each attempt's events go in
// order; an event is dropped once a server answered it (committed,
// stale or refused), and a request no server answered is sent again
// after a backoff of 100 ms doubling to 2 s. A request refused as a whole
// (4xx) is sent again one event at a time, so that only the event the
// server cannot take is dropped.
func (m *Machine) sendEvents() {
	backoff := minBackoff
	for {
		m.mu.Lock()
		if len(m.outbox) == 0 || m.dead.Load() {
			m.sending = false
			m.mu.Unlock()
			return
		}
		evs := append([]client.ChildEvent(nil), m.outbox[:min(len(m.outbox), senderBatch)]...)
		m.mu.Unlock()
		n, ok := m.deliver(evs)
		m.mu.Lock()
		if len(m.outbox) >= n { // kill empties it
			m.outbox = m.outbox[n:]
		}
		m.mu.Unlock()
		if ok {
			backoff = minBackoff
			continue
		}
		select {
		case <-m.ctx.Done():
			m.mu.Lock()
			m.sending = false
			m.mu.Unlock()
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// deliver sends evs and returns how many of them, from the first, a
// server answered, and whether all were.
func (m *Machine) deliver(evs []client.ChildEvent) (int, bool) {
	ctx, cancel := context.WithTimeout(m.ctx, reportTimeout)
	defer cancel()
	res, err := m.rc.ReportChildren(ctx, evs)
	var refused *client.APIError
	switch {
	case err == nil:
		for i, r := range res {
			if r.Error != "" {
				m.log.Error("server rejected child event; dropped", "kind", evs[i].Kind, "job", evs[i].JobID,
					"instance", evs[i].Instance, "attempt", evs[i].Attempt, "err", r.Error)
			}
		}
		return len(evs), true
	case errors.As(err, &refused) && refused.Status >= 400 && refused.Status < 500 && len(evs) > 1:
		for i, ev := range evs {
			if _, ok := m.deliver([]client.ChildEvent{ev}); !ok {
				return i, false
			}
		}
		return len(evs), true
	case errors.As(err, &refused) && refused.Status >= 400 && refused.Status < 500:
		m.log.Error("server rejected child event; dropped", "kind", evs[0].Kind, "job", evs[0].JobID, "err", err)
		return 1, true
	default:
		if m.ctx.Err() == nil {
			m.log.Debug("child events not delivered", "events", len(evs), "err", err)
		}
		return 0, false
	}
}
