package server

import (
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/lease"
)

// expireLeases declares expired the leases of machines that stopped
// renewing (up machines, and down ones still holding restartable work)
// when expirable allows it, and those of restarting machines whose
// restart lease ran out.
func (s *Server) expireLeases(t *lease.Table, now time.Time) {
	var expired []string
	s.fsm.Read(func(v fsm.View) {
		var quorum []bool // built for the first candidate
		for _, m := range v.Machines() {
			if m.State == fsm.MachineRestarting {
				// Its supervisors hold its jobs for the restart lease,
				// whatever the pool says: no outage rule shortens it.
				if t.RestartExpired(m.Name, now) {
					expired = append(expired, m.Name)
				}
				continue
			}
			if m.State == fsm.MachineUnreachable || !t.Expired(m.Name, now) {
				continue
			}
			if m.State != fsm.MachineUp && v.Running(m.Name) == 0 {
				continue
			}
			pool := t.Pool(v)
			if quorum == nil {
				from, to := statementWindow(now)
				quorum = pool.QuorumFrom(func(name string) bool { return t.Held(name, from, to) })
			}
			if s.expirable(t, now, m.Name, pool, quorum) {
				expired = append(expired, m.Name)
			}
		}
	})
	for _, name := range expired {
		res, err := s.apply(fsm.LeaseExpiredType, fsm.LeaseExpired{At: now.UTC(), Machine: name})
		if err != nil {
			s.log.Warn("commit lease expiry failed", "machine", name, "err", err)
			continue
		}
		s.metrics.leaseExpired()
		s.log.Warn("machine lease expired", "machine", name, "restarted", res.Affected)
	}
}

// The outage grace (Config.OutageGrace). An hour outlasts a coordinated
// upgrade of the server group, a storage array's or hypervisor's hiccup
// and most power cuts of a server room, while a machine that died while
// fewer than half the pool renewed (a rack's power) still has its
// restartable work started elsewhere the same hour. MaxOutageGrace bounds
// the setting: a leader that does not know which grace an earlier one
// told a silent stub assumes this one.
const (
	DefaultOutageGrace = time.Hour
	MaxOutageGrace     = lease.MaxOutageGrace
)

// statementWindow is when a machine's own lease must provably have held,
// with client.OutageVouchWithin to spare, for it to count against an
// expiry at now. The stub must have stopped by now-leaseMargin; the
// statements that could let it keep its work then are those of the
// rounds it began at most client.OutageCoverFor earlier, each made within
// client.OutageAnswerWithin of its start; and a stub says its lease ran
// out once less than client.OutageVouchWithin of it is left.
func statementWindow(now time.Time) (from, to time.Time) {
	stop := now.Add(-leaseMargin)
	return stop.Add(-client.OutageCoverFor), stop.Add(client.OutageAnswerWithin + client.OutageVouchWithin)
}

// expirable reports whether the leader may declare expired the lease of a
// machine silent for more than LeaseDuration+leaseMargin: its restartable
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
// client.OutageCoverFor before now-leaseMargin found a majority, and it
// stopped by now-leaseMargin. Past the grace, both sides fall back to the plain lease
// rule. With no grace, the plain rule is the only one. The grace is the
// one this leadership told the stub, or the longest any server may have
// told it (MaxOutageGrace) until the stub proves which it holds.
func (s *Server) expirable(t *lease.Table, now time.Time, machine string, pool *lease.PoolOrder, quorum []bool) bool {
	if t.Silence(machine, now) > LeaseDuration+leaseMargin+t.Grace(machine) {
		return true
	}
	k := t.Knows(machine, pool.Position(machine))
	return k >= 1 && k <= pool.Size() && quorum[k]
}
