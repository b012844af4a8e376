package stub

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/owner"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// Lease timing the stub assumes until a server tells it otherwise (the
// server's LeaseResponse carries the real values).
const (
	// defaultLease is also what a supervisor assumes without a lease file.
	defaultLease      = supervisor.DefaultLease
	defaultRenewEvery = 500 * time.Millisecond
	// renewTimeout bounds one renewal round across the servers at 0.5 s
	// renewals (renewRound; hedged: see leaseHedgeAfter), so an
	// unreachable group cannot keep the keeper from noticing that the
	// lease ran out for long; supervisors enforce the lease file
	// meanwhile. A renewal's lease counts from when it was
	// sent, so a slow answer never stretches it.
	renewTimeout = time.Second
)

// renewRound returns how long one renewal round lasts and how long it
// waits for the leader in it, at renewal interval every
// (client.LeaseRound: renewTimeout and leaseLeaderPatience at 0.5 s).
func renewRound(every time.Duration) (round, patience time.Duration) {
	return client.LeaseRound(every, renewTimeout, leaseLeaderPatience)
}

// longestRound is the round at the longest interval a leader grants.
var longestRound, _ = renewRound(client.MaxRenewEvery)

// leaseKeeper renews the stub's lease with the server group and, when the
// lease runs out unrenewed, stops the attempts of restartable jobs: the
// servers may start them elsewhere once the lease has expired on their
// side, which is later than here (see server.LeaseDuration). Non-restartable
// attempts are never stopped for being cut off.
type leaseKeeper struct {
	machine string
	dataDir string // where the lease file for supervisors goes
	runner  *runner
	servers *serverList
	facts   *factSource
	// health, when set, is the machine's health, reported with every
	// renewal (LeaseRequest.Problem): the leader records a change.
	health *healthWatch
	// owner, when set, is the owner policy, whose verdict goes with every
	// renewal (LeaseRequest.Asleep) while the servers take it.
	owner *owner.Watch
	// ownerSettings, when set, takes the database's owner-policy settings
	// each renewal's answer carries (LeaseResponse.Owner).
	ownerSettings *ownerSettings
	// ownLoad, when set, measures the load the stub's own jobs cause
	// (LeaseRequest.OwnLoad); called from run's goroutine only.
	ownLoad func() float64
	log     *slog.Logger
	// deadline is when the lease runs out, on the boot clock (ns).
	deadline atomic.Int64
	// vouchUntil is until when, on the boot clock (ns), the stub goes on
	// saying its lease ran out after the renewal that ended it
	// (client.OutageVouchAfterFor its interval); its renewals echo no
	// token before then.
	vouchUntil atomic.Int64
	// renewEvery is the renewal interval the last answer gave (ns); 0
	// before one (defaultRenewEvery).
	renewEvery atomic.Int64
	// loadByLease is set while the servers take the load with renewals
	// (LeaseResponse.TakesLoad); gossip then stops spreading its changes.
	loadByLease atomic.Bool
	// takesAsleep is set while the last answer said the servers take the
	// owner verdict (LeaseResponse.TakesAsleep).
	takesAsleep atomic.Bool
	// machineIndex is the highest machine index a renewal reported
	// (LeaseResponse.MachineIndex). It is raised before the deadline it
	// came with, and read after the deadline, so a Start that sees the
	// renewed lease sees its index too.
	machineIndex atomic.Uint64
	// outage is the stub's side of riding out a control-plane outage;
	// nil in tests that build a keeper alone.
	outage *outage
	// factsOf, when set, gives the machine's facts for the renewals that
	// carry them (LeaseRequest.Facts); set before run starts.
	factsOf func() (client.Facts, error)
	// factsKept is set once the servers need no facts from renewals: an
	// answer did not ask for them (LeaseResponse.WantFacts), or a server
	// that predates the field refused it. Unset, the next renewal carries
	// them, so the first one does: the leader then joins the machine
	// without a connection of its own to it.
	factsKept atomic.Bool
	// factsSent is whether the last renewal carried the facts; run's
	// goroutine only.
	factsSent atomic.Bool

	mu sync.Mutex // guards the fields below
	// token is the last answer's token, echoed in the next renewal, and
	// tokenAt when that answer arrived (boot clock).
	token   *client.LeaseToken
	tokenAt time.Duration
	// position, poolSize and grace are from the last renewal that told
	// them (see client.LeaseResponse); poolSize only grows.
	position, poolSize int
	grace              time.Duration
	// provenPool is the Pool of the token echoed in the last renewal the
	// leader answered (see client.OutageStatement.ProvenPool).
	provenPool int
	// loadSent is the load (and own load) the last answered renewal
	// carried, and loadTo the leadership that answered it; loadSentOK
	// says there was one (loadMoved).
	loadSent, ownSent float64
	loadTo            uint64
	loadSentOK        bool
	// published is the deadline last written to the lease file.
	published time.Duration
	// final is set once the restart lease is written (lease_restart.go):
	// nothing writes the lease file after it.
	final bool

	// starting counts the restartable Starts being admitted and started
	// (startOne): while one is, renewals write the lease file although no
	// restartable attempt runs yet (publish).
	starting atomic.Int32

	// halt, closed by stopRenewing, ends run, which closes done.
	halt, done chan struct{}
	// halted is set once stopRenewing began: no restartable Start is
	// admitted after it.
	halted atomic.Bool
}

// newLeaseKeeper returns a keeper whose lease counts as granted now: a
// previous incarnation of the stub may have renewed one moments ago.
func newLeaseKeeper(machine, dataDir string, r *runner, servers *serverList, facts *factSource, log *slog.Logger) *leaseKeeper {
	k := &leaseKeeper{machine: machine, dataDir: dataDir, runner: r, servers: servers, facts: facts, log: log,
		halt: make(chan struct{}), done: make(chan struct{})}
	k.deadline.Store(int64(supervisor.BootNow() + defaultLease))
	return k
}

// valid reports whether the lease holds now. A stub outside its lease must
// not start restartable work: a Start that waited in a socket while the
// machine was frozen may name an attempt the servers have since started
// elsewhere.
func (k *leaseKeeper) valid() bool { return supervisor.BootNow() < time.Duration(k.deadline.Load()) }

// admits reports whether a restartable Start the leader sent at
// machineIndex may start: the lease holds now, and the machine has not
// lost its lease since the Start was sent (its index is not older than
// the one the last renewal reported). A Start that sat in a frozen
// machine's socket while its lease expired and its instance started
// elsewhere fails the second test even when a renewal after the thaw
// made the lease valid again. Before the first renewal that reports an
// index, every index passes the second test.
func (k *leaseKeeper) admits(machineIndex uint64) bool {
	if !k.valid() || k.halted.Load() {
		return false
	}
	return machineIndex >= k.machineIndex.Load()
}

// run renews until ctx ends. A stub that has just started assumes a lease
// granted now: its previous incarnation may have renewed one moments ago,
// so it must stop restartable work if it cannot renew within a lease,
// unless the pool says the whole control plane is gone (outage.go).
func (k *leaseKeeper) run(ctx context.Context) {
	defer close(k.done)
	defer func() {
		if c := k.servers.leaseClient(); c != nil {
			c.CloseLeaseStream()
		}
	}()
	every := defaultRenewEvery
	stopped, riding := false, false
	factsAsked := false // the last answer asked for facts: renew at once
	for {
		select {
		case <-k.halt:
			return
		default:
		}
		sent, sentBoot := time.Now(), supervisor.BootNow()
		hurried := factsAsked
		factsAsked = false
		// Whether the lease itself had run out or nearly: the vouching
		// that follows a renewal does not extend itself.
		said := k.runsOut(sentBoot)
		resp, renewed := k.renew(ctx)
		if renewed {
			every = max(time.Duration(resp.RenewMS)*time.Millisecond, defaultRenewEvery)
			if said {
				// Before the new deadline, so that no statement between
				// the two says the lease holds.
				k.vouchUntil.Store(int64(supervisor.BootNow() + client.OutageVouchAfterFor(every)))
			}
			// An answer that asks for the facts the renewal did not carry
			// (the machine left the pool, or a new leader took over before
			// it joined) gets them at once, once: the join waits for them.
			factsAsked = resp.WantFacts && !k.factsSent.Load() && !hurried
			lease := time.Duration(resp.LeaseMS) * time.Millisecond
			k.renewEvery.Store(int64(every))
			k.raiseMachineIndex(resp.MachineIndex) // before the deadline: see admits
			k.deadline.Store(int64(sentBoot + lease))
			k.learn(resp)
			if k.ownerSettings != nil {
				k.ownerSettings.apply(resp.Owner)
			}
			k.publish()
			if stopped || riding {
				k.log.Info("lease renewed again", "machine", k.machine)
				stopped, riding = false, false
			}
		}
		now := supervisor.BootNow()
		switch {
		case now < time.Duration(k.deadline.Load()):
		case k.outage != nil && k.outage.covers(now) && k.mayRideOut(now):
			if !riding {
				riding = true
				k.log.Warn("lease expired, but most of the pool is cut off from the servers too: keeping restartable attempts", "machine", k.machine)
			}
		case !stopped:
			stopped, riding = true, false
			n := k.runner.stopRestartable(ctx)
			k.log.Warn("lease expired: stopped restartable attempts", "machine", k.machine, "stopped", n)
		}
		wait := every
		if !renewed {
			// No answer (a leader change, a lost packet): try again
			// sooner than the interval, so that a long one does not leave
			// one try in a lease, yet paced with the pool's size and at
			// random, so that a pool whose leader died does not bury the
			// survivors in retries (client.LeaseRetryWait).
			wait = client.LeaseRetryWait(every)
		}
		if !stopped {
			// Wake when the lease or the cover may run out.
			wait = min(wait, max(time.Duration(k.deadline.Load())-supervisor.BootNow(), outageAskEvery))
		}
		if factsAsked {
			wait = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-k.halt:
			return
		case <-time.After(max(wait-time.Since(sent), 0)):
		}
	}
}

// learn keeps what a renewal's answer told about the pool and the outage
// grace, and its token for the next renewal.
func (k *leaseKeeper) learn(resp client.LeaseResponse) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.token, k.tokenAt = resp.Token, supervisor.BootNow()
	k.position = resp.Position
	k.poolSize = max(k.poolSize, resp.PoolSize)
	k.grace = max(time.Duration(resp.OutageGraceMS)*time.Millisecond, 0)
}

// pool returns the machine's position in the pool, the pool's size and
// the outage grace, as the last renewals told them; zeros before any.
func (k *leaseKeeper) pool() (position, size int, grace time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.position, k.poolSize, k.grace
}

// mayRideOut reports whether, at boot time now, the stub may keep
// restartable work past its lease given cover from the pool: it knows its
// place in the pool and the lease ran out less than the grace ago.
func (k *leaseKeeper) mayRideOut(now time.Duration) bool {
	return k.nearOutage(now) && now >= time.Duration(k.deadline.Load())
}

// saysExpired reports whether the stub says, at boot time now, that its
// lease ran out (client.OutageStatement.Expired): it knows its place in
// the pool, and less than vouchWithin of its lease is left
// or a renewal ended its saying so less than client.OutageVouchAfterFor
// its interval ago.
func (k *leaseKeeper) saysExpired(now time.Duration) bool {
	return k.runsOut(now) || (k.knowsPlace() && now < time.Duration(k.vouchUntil.Load()))
}

// runsOut reports whether, at boot time now, the stub knows its place in
// the pool and less than vouchWithin of its lease is left.
func (k *leaseKeeper) runsOut(now time.Duration) bool {
	return k.knowsPlace() && time.Duration(k.deadline.Load())-now < k.vouchWithin()
}

// vouchWithin is how long before its lease runs out the stub says it did
// (client.OutageVouchFor its renewal interval).
func (k *leaseKeeper) vouchWithin() time.Duration {
	return client.OutageVouchFor(max(time.Duration(k.renewEvery.Load()), defaultRenewEvery))
}

// knowsPlace reports whether a renewal told the stub its place in the pool.
func (k *leaseKeeper) knowsPlace() bool {
	pos, _, _ := k.pool()
	return pos > 0
}

// nearOutage reports whether, at boot time now, the stub may soon need
// cover (and says its lease ran out: see client.OutageStatement): less
// than vouchWithin of its lease is left, or it ran out less
// than the grace ago, and it knows its place in the pool.
func (k *leaseKeeper) nearOutage(now time.Duration) bool {
	pos, size, grace := k.pool()
	deadline := time.Duration(k.deadline.Load())
	return pos > 0 && size > 0 && grace > 0 && now >= deadline-k.vouchWithin() && now < deadline+grace
}

// publish writes to the lease file the later of the lease's deadline and
// the outage cover's, so that supervisors stop restartable attempts when
// both have run out, even if this stub is dead by then. Only the
// supervisors of restartable attempts read the file, so while none runs
// or is being started it writes nothing: an idle stub renews without a
// file written (and its directory changed) twice a second, and a
// restartable Start publishes before its supervisor starts (startOne).
// The file then holds a deadline no later than the lease's, which only
// makes a supervisor stop sooner.
func (k *leaseKeeper) publish() {
	if k.starting.Load() == 0 && k.runner != nil && !k.runner.hasRestartable() {
		return
	}
	until := time.Duration(k.deadline.Load())
	if k.outage != nil {
		covered := time.Duration(k.outage.coveredUntil.Load())
		if covered > until && k.nearOutage(supervisor.BootNow()) {
			until = covered
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if until == k.published || k.final {
		return
	}
	if err := supervisor.WriteLease(k.dataDir, until, 0); err != nil {
		k.log.Error("record lease for supervisors", "err", err)
		return
	}
	k.published = until
}

// raiseMachineIndex records a renewal's machine index unless a higher one
// is known (answers of a server behind the leader may come late).
func (k *leaseKeeper) raiseMachineIndex(i uint64) {
	for {
		cur := k.machineIndex.Load()
		if i <= cur || k.machineIndex.CompareAndSwap(cur, i) {
			return
		}
	}
}

// loadStep is how far the load (or the share the stub's own jobs cause)
// moves before a renewal carries it again: the leader keeps the last
// one it was sent (lease.Table), so an idle machine's renewals carry
// none.
const loadStep = 0.05

// loadMoved reports whether a renewal should carry the load l and own
// load own: they moved by loadStep or more since the last answered
// renewal that carried them, or that renewal's leadership is not the one
// that answered last (a new leader holds no load), or the server gives
// no tokens to tell leaderships apart.
func (k *leaseKeeper) loadMoved(l, own float64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.loadSentOK || k.token == nil || k.token.Leadership != k.loadTo ||
		math.Abs(l-k.loadSent) >= loadStep || math.Abs(own-k.ownSent) >= loadStep
}

func (k *leaseKeeper) renew(ctx context.Context) (client.LeaseResponse, bool) {
	c := k.servers.leaseClient()
	if c == nil {
		return client.LeaseResponse{}, false
	}
	round, patience := renewRound(time.Duration(k.renewEvery.Load()))
	rctx, cancel := context.WithTimeout(ctx, round)
	defer cancel()
	rctx = client.WithPatience(rctx, patience)
	req := client.LeaseRequest{Machine: k.machine, Running: k.runner.runningAttempts(), Problem: k.health.problem()}
	k.mu.Lock()
	// No token while the stub says its lease ran out after it was renewed:
	// a token echoed proves to the leader that the stub says nothing from
	// the request's arrival on (see client.OutageVouchAfterFor).
	if now := supervisor.BootNow(); k.token != nil && now >= time.Duration(k.vouchUntil.Load()) {
		// Measured last, so that the request leaves after the age it claims.
		req.Token, req.TokenAgeMS = k.token, (now - k.tokenAt).Milliseconds()
	}
	k.mu.Unlock()
	if k.takesAsleep.Load() {
		v := k.owner.Verdict()
		req.Asleep = &v
		if idle, ok := k.owner.Idle(time.Now()); ok {
			s := int64(idle / time.Second)
			req.IdleS = &s
		}
	}
	own, hasOwn := 0.0, k.ownLoad != nil && k.takesAsleep.Load()
	if k.ownLoad != nil {
		own = k.ownLoad() // measured every renewal, sent or not, to keep its average
	}
	if k.loadByLease.Load() {
		if l, err := k.facts.load(); err == nil && k.loadMoved(l, own) {
			req.Load = &l
			if hasOwn {
				req.OwnLoad = &own
			}
		}
	}
	if k.factsOf != nil && !k.factsKept.Load() {
		if f, err := k.factsOf(); err == nil {
			req.Facts = &f
		}
	}
	k.factsSent.Store(req.Facts != nil)
	resp, err := c.RenewLease(rctx, req)
	if err != nil || resp.LeaseMS <= 0 {
		k.log.Debug("lease renewal failed", "machine", k.machine, "err", err)
		if req.Asleep != nil {
			// A server that predates the field refuses it: the next
			// renewal goes without, until an answer says it is taken.
			k.takesAsleep.Store(false)
		}
		var refused *client.APIError
		if req.Facts != nil && errors.As(err, &refused) && refused.Status == http.StatusBadRequest {
			// Likewise for the facts: the leader fetches them itself.
			k.factsKept.Store(true)
		}
		return resp, false
	}
	k.loadByLease.Store(resp.TakesLoad)
	k.takesAsleep.Store(resp.TakesAsleep)
	k.factsKept.Store(!resp.WantFacts)
	if req.Load != nil && resp.Token != nil {
		k.mu.Lock()
		k.loadSent, k.loadTo, k.loadSentOK = *req.Load, resp.Token.Leadership, true
		if req.OwnLoad != nil {
			k.ownSent = *req.OwnLoad
		}
		k.mu.Unlock()
	}
	if req.Token != nil && resp.Token != nil && req.Token.Leadership == resp.Token.Leadership {
		k.mu.Lock()
		k.provenPool = req.Token.Pool
		k.mu.Unlock()
	}
	return resp, true
}
