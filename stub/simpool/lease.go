package simpool

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
)

// Lease timing the machine assumes until a server tells it otherwise, as
// the stub's (stub/lease.go).
const (
	defaultLease      = 3 * time.Second
	defaultRenewEvery = 500 * time.Millisecond
	renewTimeout      = time.Second
)

// epoch is the monotonic origin of leaseState's deadlines.
var epoch = time.Now()

// leaseState is the machine's lease as its keeper holds it.
type leaseState struct {
	// deadline is when the lease runs out, in ns since epoch.
	deadline atomic.Int64
	// machineIndex is the highest machine index a renewal reported.
	machineIndex atomic.Uint64
	// position and poolSize are from the last renewal that told them
	// (poolSize only grows), grace its outage grace (ns), renewEvery its
	// interval (ns; 0 before one): what the machine's statements say
	// (outage.go).
	position, poolSize atomic.Int32
	grace, renewEvery  atomic.Int64
	// vouchUntil is until when (ns since epoch) the machine goes on
	// saying its lease ran out after the renewal that ended that; it
	// echoes no token before then (client.OutageVouchAfterFor).
	vouchUntil atomic.Int64
	// coveredUntil is when the cover of the last round that found most
	// of the pool cut off ends (ns since epoch).
	coveredUntil atomic.Int64
	// stopped: the lease ran out and the restartable attempts were
	// stopped; riding: it ran out and the attempts are kept under cover.
	stopped, riding atomic.Bool
}

// admits reports whether a restartable Start sent at machineIndex may
// start, as the stub's leaseKeeper.admits does.
func (m *Machine) admits(machineIndex uint64) bool {
	return time.Since(epoch) < time.Duration(m.lease.deadline.Load()) && machineIndex >= m.lease.machineIndex.Load()
}

// startLease starts the machine's lease keeper, once.
func (m *Machine) startLease() {
	if m.started.Swap(true) {
		return
	}
	m.lease.deadline.Store(int64(time.Since(epoch) + defaultLease))
	m.pool.wg.Go(m.keepLease)
}

// keepLease renews the lease until the machine dies, as the stub's
// leaseKeeper.run does: a renewal every RenewMS, one round over the
// servers each (client.WithRetryFor(0)), again after
// client.LeaseRetryWait when one failed (the first at a random point of
// the first period, so that a pool started at once does not renew in
// step), the facts with the first and whenever an answer asks for them,
// the answer's token echoed but while the machine vouches after an
// expiry; a lease that runs out stops the restartable attempts unless
// the pool covers them (outage.go).
func (m *Machine) keepLease() {
	defer m.lc.CloseLeaseStream()
	every := defaultRenewEvery
	wait := rand.N(every)
	var (
		token     *client.LeaseToken
		tokenAt   time.Time
		factsKept bool
		takesLoad bool
	)
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(wait):
		}
		sent := time.Now()
		said := m.runsOut(sent.Sub(epoch))
		req := client.LeaseRequest{Machine: m.name, Running: m.running()}
		if token != nil && sent.Sub(epoch) >= time.Duration(m.lease.vouchUntil.Load()) {
			req.Token, req.TokenAgeMS = token, time.Since(tokenAt).Milliseconds()
		}
		if takesLoad {
			l := m.pool.cfg.Facts.Load
			req.Load = &l
		}
		if !factsKept {
			f := m.facts()
			req.Facts = &f
		}
		// The round and the leader's patience grow with a large pool's
		// interval, as the stub's.
		round, patience := client.LeaseRound(every, renewTimeout, leaseLeaderPatience)
		ctx, cancel := context.WithTimeout(m.ctx, round)
		resp, err := m.lc.RenewLease(client.WithPatience(ctx, patience), req)
		cancel()
		factsAsked, renewed := false, false
		switch {
		case err == nil && resp.LeaseMS > 0:
			m.renewals.Add(1)
			renewed = true
			every = max(time.Duration(resp.RenewMS)*time.Millisecond, defaultRenewEvery)
			if said {
				// Before the new deadline, so that no statement between
				// the two says the lease holds.
				m.lease.vouchUntil.Store(int64(now() + client.OutageVouchAfterFor(every)))
			}
			m.lease.renewEvery.Store(int64(every))
			for cur := m.lease.machineIndex.Load(); resp.MachineIndex > cur; cur = m.lease.machineIndex.Load() {
				if m.lease.machineIndex.CompareAndSwap(cur, resp.MachineIndex) {
					break
				}
			}
			m.lease.deadline.Store(int64(sent.Sub(epoch) + time.Duration(resp.LeaseMS)*time.Millisecond))
			m.learn(resp)
			token, tokenAt = resp.Token, time.Now()
			takesLoad = resp.TakesLoad
			factsAsked = resp.WantFacts && req.Facts == nil
			factsKept = !resp.WantFacts
			if m.lease.stopped.Swap(false) || m.lease.riding.Swap(false) {
				m.log.Info("lease renewed again")
			}
		default:
			m.failures.Add(1)
			var refused *client.APIError
			if req.Facts != nil && errors.As(err, &refused) && refused.Status == http.StatusBadRequest {
				factsKept = true
			}
			if m.ctx.Err() == nil {
				m.log.Debug("lease renewal failed", "err", err)
			}
		}
		if m.ctx.Err() == nil {
			m.checkLease(now())
		}
		wait = max(every-time.Since(sent), 0)
		if !renewed {
			// As the stub: no answer, try again soon, paced with the pool.
			wait = max(client.LeaseRetryWait(every)-time.Since(sent), 0)
		}
		if factsAsked {
			wait = 0
		}
	}
}

// learn keeps what a renewal's answer told about the pool and the outage
// grace, as the stub's leaseKeeper.learn does.
func (m *Machine) learn(resp client.LeaseResponse) {
	m.lease.position.Store(int32(resp.Position))
	for cur := m.lease.poolSize.Load(); int32(resp.PoolSize) > cur; cur = m.lease.poolSize.Load() {
		if m.lease.poolSize.CompareAndSwap(cur, int32(resp.PoolSize)) {
			break
		}
	}
	m.lease.grace.Store(int64(max(time.Duration(resp.OutageGraceMS)*time.Millisecond, 0)))
}

// Renewals returns how many of the machine's lease renewals a server
// granted, and how many failed (refused, unanswered or timed out), over
// its life: what a test reads to see its lease kept.
func (m *Machine) Renewals() (granted, failed int64) {
	return m.renewals.Load(), m.failures.Load()
}
