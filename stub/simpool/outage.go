package simpool

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// Riding out a control-plane outage, as the stub does (stub/outage.go),
// with the pool's questions answered in-process. Each machine keeps what
// the stub's lease keeper keeps for it (its place in the pool and the
// pool's size from its renewals, the outage grace, the vouching after a
// renewal that ended an expiry, no token echoed meanwhile) and says what
// the stub says (statement). The witness tree a real pool walks over HTTP
// is shared: every outageAskEvery, while any machine may need cover, the
// pool tallies every live machine's statement made then (a round), and a
// machine whose lease runs out keeps its restartable attempts while the
// last round, begun at most client.OutageCoverFor ago, found more than
// half of the pool it knows cut off too; otherwise it stops them, as the
// stub does. A real stub among the simulated machines asks them over
// HTTP (GET /v1/outage, POST /v1/outage/witness, GET /v1/outage/tally),
// and is answered from the machines' statements made after it asked; the
// pool's own rounds do not ask real stubs.

// outageAskEvery is how often a machine near an outage asks for cover:
// the stub's.
const outageAskEvery = 100 * time.Millisecond

// now is the time on leaseState's clock.
func now() time.Duration { return time.Since(epoch) }

// vouchWithin is how long before its lease runs out the machine says it
// did (client.OutageVouchFor its renewal interval).
func (m *Machine) vouchWithin() time.Duration {
	return client.OutageVouchFor(max(time.Duration(m.lease.renewEvery.Load()), defaultRenewEvery))
}

// runsOut reports whether, at t, the machine knows its place in the pool
// and less than vouchWithin of its lease is left.
func (m *Machine) runsOut(t time.Duration) bool {
	return m.lease.position.Load() > 0 && time.Duration(m.lease.deadline.Load())-t < m.vouchWithin()
}

// saysExpired reports whether the machine says, at t, that its lease ran
// out (client.OutageStatement.Expired).
func (m *Machine) saysExpired(t time.Duration) bool {
	return m.runsOut(t) || (m.lease.position.Load() > 0 && t < time.Duration(m.lease.vouchUntil.Load()))
}

// nearOutage reports whether, at t, the machine may soon need cover: it
// knows its place and the grace, and its lease runs out within vouchWithin
// or ran out less than the grace ago.
func (m *Machine) nearOutage(t time.Duration) bool {
	deadline, grace := time.Duration(m.lease.deadline.Load()), time.Duration(m.lease.grace.Load())
	return m.lease.position.Load() > 0 && m.lease.poolSize.Load() > 0 && grace > 0 &&
		t >= deadline-m.vouchWithin() && t < deadline+grace
}

// statement is the machine's answer to GET /v1/outage at t.
func (m *Machine) statement(t time.Duration) client.OutageStatement {
	return client.OutageStatement{Machine: m.name, Expired: m.saysExpired(t),
		Position: int(m.lease.position.Load()), PoolSize: int(m.lease.poolSize.Load())}
}

// checkLease stops the machine's restartable attempts, once, when at t
// its lease has run out and no cover lets it keep them. A machine that
// never held a lease has nothing to stop (a Start needs one).
func (m *Machine) checkLease(t time.Duration) {
	deadline := time.Duration(m.lease.deadline.Load())
	switch {
	case m.Dead() || !m.started.Load() || deadline == 0 || t < deadline:
	case t < time.Duration(m.lease.coveredUntil.Load()) && m.nearOutage(t):
		if !m.lease.riding.Swap(true) {
			m.log.Warn("lease expired, but most of the pool is cut off from the servers too: keeping restartable attempts")
		}
	case !m.lease.stopped.Swap(true):
		m.lease.riding.Store(false)
		n := m.stopRestartable()
		m.pool.stoppedByLease.Add(int64(n))
		m.log.Warn("lease expired: stopped restartable attempts", "stopped", n)
	}
}

// tally sums the statements, made at t, of the pool's live machines whose
// names lie in [from, to] ("" to: no end).
func (p *Pool) tally(t time.Duration, from, to string) client.OutageTally {
	sts := make([]client.OutageStatement, 0, len(p.ms))
	for _, m := range p.ms {
		if m.Dead() || m.name < from || to != "" && m.name > to {
			continue
		}
		sts = append(sts, m.statement(t))
	}
	expired, pool := 0, 0
	for _, st := range sts {
		pool = max(pool, st.PoolSize)
	}
	for _, st := range sts {
		if st.Expired && st.Position >= 1 && st.Position <= pool {
			expired++
		}
	}
	return client.OutageTally{Expired: expired, Pool: pool, Answered: len(sts)}
}

// rideOutages runs the pool's witness rounds until the pool stops: every
// outageAskEvery while a machine is near an outage, a round whose tally
// covers each such machine that finds more than half its pool cut off,
// then every machine's lease checked. Rounds overlap, up to
// roundsInFlight, as a stub's asks do (stub/outage.go): a round waiting
// for the other processes does not hold up the next, nor the checks.
func (p *Pool) rideOutages() {
	tick := time.NewTicker(outageAskEvery)
	defer tick.Stop()
	inFlight := make(chan struct{}, roundsInFlight)
	var rounds sync.WaitGroup
	defer rounds.Wait()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case inFlight <- struct{}{}:
			began := now()
			rounds.Go(func() {
				defer func() { <-inFlight }()
				p.coverRound(began)
			})
		default:
		}
		at := now()
		for _, m := range p.ms {
			m.checkLease(at)
		}
	}
}

// roundsInFlight bounds the pool's witness rounds under way at once.
const roundsInFlight = 4

// coverRound runs one witness round begun at began when a live machine is
// near an outage, and covers, until client.OutageCoverFor after began,
// each machine near one whose pool it finds more than half cut off.
func (p *Pool) coverRound(began time.Duration) {
	near := false
	for _, m := range p.ms {
		if !m.Dead() && m.nearOutage(began) {
			near = true
			break
		}
	}
	if !near {
		return
	}
	t := p.tally(began, "", "")
	t.Add(p.peerTallies())
	if now()-began > client.OutageAnswerWithin {
		// Too late, as a stub takes no answer past this: the other
		// processes' statements may be from after the servers came back.
		p.bareRounds.Add(1)
		return
	}
	until := int64(began + client.OutageCoverFor)
	bare := false
	for _, m := range p.ms {
		if !m.nearOutage(began) {
			continue
		}
		if 2*t.Expired > max(t.Pool, int(m.lease.poolSize.Load())) {
			raise(&m.lease.coveredUntil, until) // rounds overlap: a later one may have answered first
		} else {
			bare = true
		}
	}
	if bare {
		p.bareRounds.Add(1)
	}
}

// handleOutageStatement answers GET /v1/outage for a stub or server.
func handleOutageStatement(m *Machine, w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, m.statement(now()))
}

// handleOutageWitness answers POST /v1/outage/witness for a stub or
// server: the tally of every machine of the pool, from statements made
// after the request arrived, as a witness of a pool larger than
// client.OutageFanOut answers.
func handleOutageWitness(m *Machine, w http.ResponseWriter, _ *http.Request) {
	t := m.pool.tally(now(), "", "")
	writeJSON(w, http.StatusOK, client.OutageWitness{Tally: &t})
}

// handleOutageTally answers GET /v1/outage/tally for a stub: the tally of
// the pool's machines in the range asked, as the stub's does.
func handleOutageTally(m *Machine, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	ms, err := strconv.ParseInt(q.Get("within_ms"), 10, 64)
	if err != nil || ms < 1 || from == "" || to < from {
		writeError(w, http.StatusBadRequest, fmt.Errorf("outage tally: from %q, to %q, within_ms %q: want a range and a time in ms", from, to, q.Get("within_ms")))
		return
	}
	writeJSON(w, http.StatusOK, m.pool.tally(now(), from, to))
}

// onlyRoles runs h for callers with a certificate of one of roles (every
// caller without TLS), as the stub's API does.
func onlyRoles(h func(*Machine, http.ResponseWriter, *http.Request), roles ...pki.Role) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m := mustMachine(w, r)
		if m == nil {
			return
		}
		if m.tls != nil {
			if _, err := pki.CheckPeer(r.TLS, roles...); err != nil {
				m.log.Warn("request denied", "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr, "err", err)
				writeError(w, http.StatusForbidden, fmt.Errorf("%s %s: %w (only %v certificates may)", r.Method, r.URL.Path, err, roles))
				return
			}
		}
		h(m, w, r)
	}
}

// peerTallies asks the pool's other processes (Config.OutagePeers), at
// once and within client.OutageAnswerWithin, as a stub its witness, for their tallies
// and sums those that answer: each counts statements made after this
// round began, as a tree round's ranges do.
func (p *Pool) peerTallies() client.OutageTally {
	var sum client.OutageTally
	procs := p.peers.Load()
	if procs == nil {
		return sum
	}
	ctx, cancel := context.WithTimeout(p.ctx, client.OutageAnswerWithin)
	defer cancel()
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		missed bool
	)
	for _, cs := range *procs {
		wg.Go(func() {
			t, ok := processTally(ctx, cs)
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				missed = true
				p.log.Debug("outage: another process of the pool did not answer")
				return
			}
			sum.Add(t)
		})
	}
	wg.Wait()
	if missed {
		p.peerMisses.Add(1)
	}
	return sum
}

// processTally asks each of cs, machines of one process, at once for
// its witness answer and returns the first tally.
func processTally(ctx context.Context, cs []*client.StubClient) (client.OutageTally, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan *client.OutageTally, len(cs))
	for _, c := range cs {
		go func() {
			w, err := c.OutageWitness(ctx)
			if err != nil {
				w.Tally = nil
			}
			answers <- w.Tally
		}()
	}
	for range cs {
		if t := <-answers; t != nil {
			return *t, true
		}
	}
	return client.OutageTally{}, false
}

// SetOutagePeers replaces the pool's outage peers (Config.OutagePeers),
// machines of each other process: its later witness rounds ask them,
// speaking as its first machine (with its certificate) and expecting
// each peer's own. No peers: the rounds tally this process's machines
// alone.
func (p *Pool) SetOutagePeers(procs [][]OutagePeer) error {
	if len(procs) == 0 || len(p.ms) == 0 {
		p.peers.Store(nil)
		return nil
	}
	m := p.ms[0]
	out := make([][]*client.StubClient, 0, len(procs))
	for _, peers := range procs {
		if len(peers) == 0 {
			return fmt.Errorf("simulated pool: outage peers: a process with no machine")
		}
		var cs []*client.StubClient
		for _, pr := range peers {
			var opts []client.Option
			if m.tls != nil {
				opts = []client.Option{
					client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(m.tls, pki.RoleStub)}),
					client.WithHTTPS(), client.ExpectPeer(pki.Identity{Role: pki.RoleStub, Name: pr.Name}),
				}
			}
			c, err := client.NewStub(pr.Addr, opts...)
			if err != nil {
				return fmt.Errorf("simulated pool: outage peer %s at %s: %w", pr.Name, pr.Addr, err)
			}
			cs = append(cs, c)
		}
		out = append(out, cs)
	}
	p.peers.Store(&out)
	return nil
}

// raise sets a to v unless it holds more already.
func raise(a *atomic.Int64, v int64) {
	for cur := a.Load(); v > cur; cur = a.Load() {
		if a.CompareAndSwap(cur, v) {
			return
		}
	}
}
