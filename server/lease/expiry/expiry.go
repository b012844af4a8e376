package expiry

import (
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty"
	"github.com/netmgr/netmgr/server/lease"
)

// Keeper is the leader's lease-expiry duty. Only the leader loop uses
// it.
type Keeper struct {
	h       duty.Handle
	expired *promtext.Counter
}

// New returns the lease-expiry duty of a leader term, which counts the
// leases it declares expired in expired.
func New(h duty.Handle, expired *promtext.Counter) *Keeper {
	return &Keeper{h: h, expired: expired}
}

// Expire declares expired the leases of machines that stopped renewing
// (up machines, and down ones still holding restartable work) when
// expirable allows it, and those of restarting machines whose restart
// lease ran out, by t, this leadership's lease table.
func (k *Keeper) Expire(t *lease.Table, now time.Time) {
	var expired []string
	k.h.Read(func(v fsm.View) {
		var quorum []bool // built for the first candidate
		size := v.MachineCount()
		// Every machine, in no order (the expired are sorted below):
		// the sorted list is rebuilt after every machine the database
		// gains, which while a large pool joins is every pass.
		for m := range v.EachMachine() {
			if m.State == fsm.MachineRestarting {
				// Its supervisors hold its jobs for the restart lease,
				// whatever the pool says: no outage rule shortens it.
				if t.RestartExpired(m.Name, now) {
					expired = append(expired, m.Name)
				}
				continue
			}
			if m.State == fsm.MachineUnreachable || !t.Expired(m.Name, now, size) {
				continue
			}
			if m.State != fsm.MachineUp && v.Running(m.Name) == 0 {
				continue
			}
			pool := t.Pool(v)
			if quorum == nil {
				from, to := statementWindow(now, client.OutageVouchFor(lease.TimingFor(size).Renew))
				quorum = pool.QuorumFrom(func(name string) bool { return t.Held(name, from, to) })
			}
			if expirable(t, now, m.Name, pool, quorum) {
				expired = append(expired, m.Name)
			}
		}
	})
	slices.Sort(expired)
	log := k.h.Log()
	for _, name := range expired {
		res, err := k.h.Apply(fsm.LeaseExpiredType, fsm.LeaseExpired{At: now.UTC(), Machine: name})
		if err != nil {
			log.Warn("commit lease expiry failed", "machine", name, "err", err)
			continue
		}
		k.expired.Inc()
		log.Warn("machine lease expired", "machine", name, "restarted", res.Affected)
	}
}

// statementWindow is when a machine's own lease must provably have held,
// with vouch to spare, for it to count against an expiry at now. The stub
// must have stopped by now-lease.Margin; the statements that could let it
// keep its work then are those of the rounds it began at most
// client.OutageCoverFor earlier, each made within
// client.OutageAnswerWithin of its start; and a stub says its lease ran
// out once less than vouch of it is left: client.OutageVouchFor its
// renewal interval, which is at most the pool's (lease.TimingFor: a
// machine told a shorter interval by a smaller pool vouches later).
func statementWindow(now time.Time, vouch time.Duration) (from, to time.Time) {
	stop := now.Add(-lease.Margin)
	return stop.Add(-client.OutageCoverFor), stop.Add(client.OutageAnswerWithin + vouch)
}

// expirable reports whether the leader may declare expired the lease of a
// machine silent for more than its lease (lease.Table.Lease) plus lease.Margin: its restartable
// work may then start elsewhere, so its stub must have stopped that work.
//
// A stub whose lease ran out keeps its restartable work for up to the
// outage grace only while more than half the pool it knows (k machines,
// the first k in join order) tells it, in statements made after it asked,
// that their leases ran out too: the control plane is gone for everyone,
// not just for it. It stops otherwise (stub/outage.go). The leader
// therefore expires a lease within the grace only when at least half of
// every prefix of the pool the stub may know (from what it proved to this
// leadership, and never less than its own position) holds machines whose
// own leases provably held throughout statementWindow(now): those made no
// such statement then, so no round the stub began in the last
// client.OutageCoverFor before now-lease.Margin found a majority, and it
// stopped by now-lease.Margin. Past the grace, both sides fall back to the plain lease
// rule. With no grace, the plain rule is the only one. The grace is the
// one this leadership told the stub, or the longest any server may have
// told it (lease.MaxOutageGrace) until the stub proves which it holds.
func expirable(t *lease.Table, now time.Time, machine string, pool *lease.PoolOrder, quorum []bool) bool {
	if t.Silence(machine, now) > t.Lease(machine, pool.Size())+lease.Margin+t.Grace(machine) {
		return true
	}
	k := t.Knows(machine, pool.Position(machine))
	return k >= 1 && k <= pool.Size() && quorum[k]
}
