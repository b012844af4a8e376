package lease

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Table is the leader's memory of each machine's lease: when it last
// renewed, the load it reported then, and what the machine has proven by
// echoing the token of an earlier answer. It is soft state: a new leader
// starts every lease afresh, and tokens of another leadership prove
// nothing to it.
type Table struct {
	since time.Time // this leadership began
	id    uint64    // names this leadership in its tokens

	mu   sync.Mutex // guards the maps and order
	last map[string]time.Time
	load map[string]float64
	// own is the load the machine's own jobs caused, as its stub last
	// reported it (LeaseRequest.OwnLoad); absent when it did not.
	own map[string]float64
	// idle is when the machine's owner last used it, as its stub last
	// reported (LeaseRequest.IdleS); absent when it did not.
	idle  map[string]time.Time
	proof map[string][]leaseProof // oldest first, at most proofsKept
	// told is the lease this leadership last granted each machine
	// (TimingFor of the pool it counted then).
	told map[string]time.Duration
	// pool is the largest pool a renewal counted, or the book held when
	// this leadership began.
	pool int
	// order is the pool's join order, rebuilt when a machine is added;
	// unused when book is set.
	order *PoolOrder
	// book, when set, is the server's lease book, which keeps the join
	// order as machines are created.
	book *Book
	// holds are the restart leases this leadership granted (restart.go: Hold),
	// by machine; nil until the first.
	holds map[string]restartHold
	// ch is what changed for the leader's liveness (changes.go).
	ch changes
}

// leaseProof is what a machine proved by echoing a token of this
// leadership in a request that arrived at arrived: it held a lease from
// before arrived (it received the token before sending the request) until
// at least until (it sent the request that won that token's lease after
// the token's Basis, and leases last Duration from sending).
type leaseProof struct {
	arrived, until time.Time
	// issued is when this leadership issued the echoed token.
	issued time.Time
	// knows and grace are the PoolSize and OutageGraceMS of the answer
	// that carried the token: the stub counts the pool as at least knows
	// machines, and every later answer of this leadership told it grace.
	knows int
	grace time.Duration
}

// proofsKept is how many recent proofs a machine keeps: with a renewal
// every LeaseRenewInterval, a few seconds' worth.
const proofsKept = 8

// NewTable returns the table of a leadership that began at since, which
// takes the pool's join order from book (nil: from the view Pool is
// given).
func NewTable(since time.Time, book *Book) *Table {
	pool := 0
	if book != nil {
		pool = book.Pool().Size()
	}
	return &Table{pool: pool,
		since: since, id: rand.Uint64() | 1, book: book,
		last: make(map[string]time.Time), load: make(map[string]float64), own: make(map[string]float64), idle: make(map[string]time.Time), proof: make(map[string][]leaseProof), told: make(map[string]time.Duration),
	}
}

// Renew records a renewal that arrived at at, with the load the machine
// reported (nil from a stub that gossips it) and the token it echoed, and
// returns the token of the answer: Issued now, and Basis the Issued of the
// echoed token plus its age when that token is this leadership's. The
// answer must grant TimingFor(poolSize).
func (t *Table) Renew(machine string, at time.Time, load *float64, echoed *client.LeaseToken, echoAge time.Duration, poolSize int, grace time.Duration) *client.LeaseToken {
	now := time.Now()
	granted := TimingFor(poolSize).Duration
	tok := &client.LeaseToken{Leadership: t.id, Issued: int64(now.Sub(t.since)), Pool: poolSize, GraceMS: grace.Milliseconds(), LeaseMS: granted.Milliseconds()}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.noteRenewal(machine, t.last[machine], at)
	t.last[machine] = at
	t.told[machine] = max(t.told[machine], granted)
	t.countPool(poolSize)
	if old, ok := t.load[machine]; load != nil && (!ok || old != *load) {
		t.noteMoved(machine)
	}
	if load != nil {
		t.load[machine] = *load
	}
	if echoed == nil || echoed.Leadership != t.id {
		return tok
	}
	// The request was sent echoAge after the echoed answer arrived, which
	// was after it was issued; and before it arrived here.
	tok.Basis = min(echoed.Issued+int64(max(echoAge, 0)), int64(at.Sub(t.since)))
	p := leaseProof{arrived: at, issued: t.since.Add(time.Duration(echoed.Issued)), knows: echoed.Pool, grace: time.Duration(echoed.GraceMS) * time.Millisecond}
	if echoed.Basis > 0 {
		l := time.Duration(echoed.LeaseMS) * time.Millisecond
		if l <= 0 {
			l = Duration
		}
		p.until = t.since.Add(time.Duration(echoed.Basis) + l)
	}
	ps := append(t.proof[machine], p)
	if len(ps) > proofsKept {
		ps = ps[len(ps)-proofsKept:]
	}
	t.proof[machine] = ps
	return tok
}

// Touch counts a renewal at at that proves nothing: a machine that
// joined the pool again.
func (t *Table) Touch(machine string, at time.Time) {
	t.mu.Lock()
	t.noteRenewal(machine, t.last[machine], at)
	t.last[machine] = at
	t.mu.Unlock()
}

// Pool returns the pool's join order: the book's, or without one rebuilt
// when v holds more machines than the cached order (machines are never
// forgotten).
func (t *Table) Pool(v fsm.View) *PoolOrder {
	if t.book != nil {
		return t.book.Pool()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.order == nil || t.order.Size() != v.MachineCount() {
		t.order = NewPoolOrder(v)
	}
	return t.order
}

// ReportedLoad is the load the machine last reported with a renewal.
func (t *Table) ReportedLoad(machine string) (float64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.load[machine]
	return l, ok
}

// SetOwnLoad records the load the machine's own jobs caused, as its
// stub reported with a renewal; nil forgets it (a stub that no longer
// reports it).
func (t *Table) SetOwnLoad(machine string, own *float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.own[machine]; ok != (own != nil) || ok && old != *own {
		t.noteMoved(machine)
	}
	if own == nil {
		delete(t.own, machine)
		return
	}
	t.own[machine] = *own
}

// SetIdleSince records when the machine's owner last used it; nil
// forgets it.
func (t *Table) SetIdleSince(machine string, since *time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.idle[machine]; ok != (since != nil) || ok && !old.Equal(*since) {
		t.noteMoved(machine)
	}
	if since == nil {
		delete(t.idle, machine)
		return
	}
	t.idle[machine] = *since
}

// IdleSince returns when the machine's owner last used it; false when its
// stub never said.
func (t *Table) IdleSince(machine string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.idle[machine]
	return s, ok
}

// OwnLoad returns the load the machine's own jobs caused at its last
// report; false when it never reported one.
func (t *Table) OwnLoad(machine string) (float64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.own[machine]
	return l, ok
}

// Silence is how long ago the machine last renewed, counting the start of
// this leadership as a renewal.
func (t *Table) Silence(machine string, now time.Time) time.Duration {
	t.mu.Lock()
	last, ok := t.last[machine]
	t.mu.Unlock()
	if !ok || last.Before(t.since) {
		last = t.since
	}
	return now.Sub(last)
}

// Expired reports whether the machine's lease has certainly run out, in
// a pool of pool machines.
func (t *Table) Expired(machine string, now time.Time, pool int) bool {
	return t.Silence(machine, now) > t.Lease(machine, pool)+Margin
}

// Lease is the longest lease the machine may hold from its last renewal:
// what this leadership granted it, or, until it renews, what a leader
// counting a pool of pool machines grants (no earlier leader counted
// more: machines are never forgotten).
func (t *Table) Lease(machine string, pool int) time.Duration {
	t.mu.Lock()
	l, ok := t.told[machine]
	t.mu.Unlock()
	if !ok {
		return TimingFor(pool).Duration
	}
	return l
}

// Held reports whether the machine provably held its lease throughout
// [from, to]: one of its proofs arrived by from and lasts until to.
func (t *Table) Held(machine string, from, to time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.proof[machine] {
		if !p.arrived.After(from) && !p.until.Before(to) {
			return true
		}
	}
	return false
}

// Grace is the outage grace the machine may be using: what this
// leadership told it, or MaxOutageGrace when it proved nothing yet (an
// earlier leader may have told it any grace up to that).
func (t *Table) Grace(machine string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ps := t.proof[machine]; len(ps) > 0 {
		return ps[len(ps)-1].grace
	}
	return MaxOutageGrace
}

// Knows is the smallest pool the machine may count: what it proved in
// this leadership, and never less than its own position.
func (t *Table) Knows(machine string, position int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := position
	for _, p := range t.proof[machine] {
		k = max(k, p.knows)
	}
	return k
}
