package stub

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// Riding out a control-plane outage. A stub whose lease ran out stops its
// restartable work (the servers may start it elsewhere), unless the whole
// control plane is gone: then nobody can start it elsewhere, and stopping
// it only loses work. The stub tells the two apart by asking the pool:
// while more than half of the machines it knows of (the first PoolSize in
// join order, from its last renewal) say, in statements made after it
// asked, that their own leases ran out too, it keeps its restartable work
// for client.OutageCoverFor after each such answer, for at most the
// outage grace past its lease. A machine cut off alone, or with a minority
// of the pool, finds no such majority and stops as before; the leader's
// side of the argument is server/lease/expiry's expirable.
//
// One stub (the one with the lowest name that answers) collects the
// statements for everyone: an OutageWitness request waits for a round
// that begins after it arrived and asks every stub it sees in gossip, so
// a pool in an outage costs one request per stub per round, not one per
// pair. Past client.OutageFanOut stubs the witness asks through a tree of
// ranges and answers with a tally, and a stub asks the first stub of its
// range, which asks the witness for everyone who asked it
// (outage_tree.go).

// outageAskEvery is how often a stub near or in an outage asks for a
// witness round; several answers fit in client.OutageCoverFor.
const outageAskEvery = 100 * time.Millisecond

// outageWitnessesTried bounds how many witnesses one ask tries.
const outageWitnessesTried = 2

// outage is the stub's side of the outage protocol: its own statement,
// the witness rounds it runs for others, and the cover it asks for.
type outage struct {
	self    string
	keeper  *leaseKeeper
	peers   *peerList
	log     *slog.Logger
	witness *witnessRounds
	// fanOut is client.OutageFanOut but in tests: how many stubs a round
	// asks itself (outage_tree.go).
	fanOut int
	// coveredUntil is when the last answer's cover ends, on the boot
	// clock (ns); 0 when there is none.
	coveredUntil atomic.Int64
}

func newOutage(self string, k *leaseKeeper, peers *peerList, log *slog.Logger) *outage {
	o := &outage{self: self, keeper: k, peers: peers, log: log, fanOut: client.OutageFanOut}
	o.witness = newWitnessRounds(o)
	return o
}

// statement is this stub's answer to GET /v1/outage: its lease ran out,
// or less than client.OutageVouchWithin of it is left, or a renewal
// ended that less than client.OutageVouchAfterFor its interval ago.
func (o *outage) statement() client.OutageStatement {
	pos, size, _ := o.keeper.pool()
	o.keeper.mu.Lock()
	proven := o.keeper.provenPool
	o.keeper.mu.Unlock()
	return client.OutageStatement{
		Machine: o.self, Position: pos, PoolSize: size, ProvenPool: proven,
		Expired: o.keeper.saysExpired(supervisor.BootNow()),
	}
}

// covers reports whether an answer lets the stub keep restartable work
// at boot time now.
func (o *outage) covers(now time.Duration) bool { return now < time.Duration(o.coveredUntil.Load()) }

// run asks for cover every outageAskEvery while the stub may need it: its
// lease runs out soon or ran out less than the grace ago, and it runs
// restartable work. Asks overlap, so one slow witness does not let the
// cover lapse. Otherwise it sleeps until the lease could come within
// client.OutageVouchWithin of its end (a renewal only moves that later),
// so a stub at rest wakes for it once per lease, not ten times a second.
func (o *outage) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	inFlight := make(chan struct{}, 2)
	t := time.NewTimer(outageAskEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := supervisor.BootNow()
		t.Reset(o.nextAsk(now))
		if !o.keeper.nearOutage(now) || !o.keeper.runner.hasRestartable() {
			continue
		}
		select {
		case inFlight <- struct{}{}:
			wg.Go(func() {
				defer func() { <-inFlight }()
				o.ask(ctx)
			})
		default:
		}
	}
}

// nextAsk is how long run waits, at boot time now, before it looks
// again: outageAskEvery while the stub is near an outage, else until the
// lease comes within the keeper's vouchWithin of its end.
func (o *outage) nextAsk(now time.Duration) time.Duration {
	if o.keeper.nearOutage(now) {
		return outageAskEvery
	}
	return max(time.Duration(o.keeper.deadline.Load())-o.keeper.vouchWithin()-now, outageAskEvery)
}

// ask runs one witness round and extends the cover when more than half
// of the pool said its leases ran out.
func (o *outage) ask(ctx context.Context) {
	sent := supervisor.BootNow()
	actx, cancel := context.WithTimeout(ctx, client.OutageAnswerWithin)
	defer cancel()
	res, ok := o.collect(actx, sent)
	if !ok || supervisor.BootNow()-sent > client.OutageAnswerWithin {
		return
	}
	_, size, _ := o.keeper.pool()
	expired := res.tally.Expired
	if len(res.sts) > 0 {
		// A pool within the fan-out: every statement, this stub's
		// too should the witness have missed it.
		expired, size = countExpired(append(res.sts, o.statement()), size)
	} else {
		size = max(size, res.tally.Pool)
	}
	if 2*expired <= size {
		o.log.Debug("outage: no majority of the pool is cut off too", "expired", expired, "pool", size)
		return
	}
	until := int64(sent + client.OutageCoverFor)
	for {
		cur := o.coveredUntil.Load()
		if until <= cur || o.coveredUntil.CompareAndSwap(cur, until) {
			break
		}
	}
	o.keeper.publish()
}

// collect gets one round's answer from the first of the first
// outageWitnessesTried stubs of this stub's range (witnessesFor: in a pool
// of at most the fan-out, the first in name order, the same for every
// stub, so they share rounds) to answer.
func (o *outage) collect(ctx context.Context, sent time.Duration) (witnessResult, bool) {
	return o.askWitnesses(ctx, witnessesFor(o.peers.withSelf(o.self), o.self, o.fanOut), sent)
}

// askWitnesses asks cands at once for a round that began after sent (this
// stub, when among them, runs or joins one itself) and returns the first
// answer: a witness that is dead but still in gossip must not use up the
// whole answer time.
func (o *outage) askWitnesses(ctx context.Context, cands []named, sent time.Duration) (witnessResult, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		res witnessResult
		ok  bool
	}
	answers := make(chan answer, len(cands))
	for _, p := range cands {
		go func() {
			var (
				res witnessResult
				err error
			)
			if p.name == o.self {
				res, err = o.witness.after(ctx, sent)
			} else {
				var w client.OutageWitness
				w, err = p.c.OutageWitness(ctx)
				res.sts = w.Statements
				if res.tally = tallyOf(w.Statements); w.Tally != nil {
					res.tally = *w.Tally
				}
			}
			if err != nil {
				o.log.Debug("outage witness did not answer", "witness", p.name, "err", err)
			}
			answers <- answer{res, err == nil}
		}()
	}
	for range cands {
		if a := <-answers; a.ok {
			return a.res, true
		}
	}
	return witnessResult{}, false
}

// countExpired counts the distinct machines of the pool that say their
// leases ran out. The pool is the largest any statement knows: a machine
// counts only within the pool as its stub knew it (its position at most
// that pool), so every counted machine lies in the pool the count is
// compared with.
func countExpired(sts []client.OutageStatement, size int) (expired, pool int) {
	pool = size
	for _, st := range sts {
		pool = max(pool, st.PoolSize)
	}
	seen := make(map[string]bool, len(sts))
	for _, st := range sts {
		if !st.Expired || seen[st.Machine] || st.Position < 1 || st.Position > pool {
			continue
		}
		seen[st.Machine] = true
		expired++
	}
	return expired, pool
}
