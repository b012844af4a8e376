package membership

import (
	"context"
	"fmt"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// join fetches a stub's facts and commits StubJoin, in the background.
func (m *Watcher) join(ctx context.Context, name, addr string) {
	m.mu.Lock()
	if m.pending[name] {
		m.mu.Unlock()
		return
	}
	m.pending[name] = true
	m.mu.Unlock()
	log := m.h.Log()
	m.wg.Go(func() {
		defer func() {
			m.mu.Lock()
			delete(m.pending, name)
			m.joined = true
			m.mu.Unlock()
		}()
		facts, source, err := m.joinFacts(ctx, name, addr)
		if err != nil {
			log.Warn("fetch stub facts failed", "machine", name, "err", err)
			return
		}
		facts.Name, facts.HTTPAddr = name, addr
		res, err := m.h.Apply(fsm.StubJoinType, fsm.StubJoin{At: time.Now().UTC(), Machine: m.cfg.MachineFacts(facts)})
		switch {
		case err != nil:
			log.Warn("commit stub join failed", "machine", name, "err", err)
		case res.Err != nil:
			log.Warn("stub join refused", "machine", name, "err", res.Err)
		default:
			// A machine back from a crash joins before its first renewal
			// arrives: count the join as one, or the renewal from before
			// the crash expires its lease a second time. Expiry only moves
			// later, so no stub's lease is cut short.
			if m.cfg.Leases != nil {
				m.cfg.Leases.Touch(name, time.Now())
			}
			m.cfg.StubJoins.WithLabelValues(source).Inc()
			log.Info("machine joined the pool", "machine", name, "arch", facts.Arch, "cpus", facts.CPUs, "facts", source)
		}
	})
}

// joinFacts returns the facts to join machine name, whose stub gossips
// the API address addr, and where they came from (the label of
// StubJoins): those its renewals carried (Config.RenewalFacts), else
// fetched from the stub.
func (m *Watcher) joinFacts(ctx context.Context, name, addr string) (client.Facts, string, error) {
	if m.cfg.RenewalFacts != nil {
		if f, ok := m.cfg.RenewalFacts(ctx, name, addr); ok {
			return f, "renewal", nil
		}
	}
	c, err := m.cfg.StubClient(name, addr)
	if err != nil {
		return client.Facts{}, "", fmt.Errorf("stub address %s unusable: %w", addr, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	f, err := c.Facts(fctx)
	if err != nil {
		return client.Facts{}, "", fmt.Errorf("fetch facts from %s: %w", addr, err)
	}
	return f, "fetched", nil
}
