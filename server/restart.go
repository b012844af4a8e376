package server

import (
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The restart grace (Config.RestartGrace): how long a machine whose stub
// stopped to restart keeps its jobs before the leader declares its lease
// expired. Two minutes cover a package upgrade and a slow start (the
// outbox opened, the supervisors re-adopted) while a stub that does not
// come back still has its restartable work started elsewhere within
// minutes. MaxRestartGrace bounds the setting: a leader that did not grant
// a restarting machine's lease itself assumes this one.
const (
	DefaultRestartGrace = 2 * time.Minute
	MaxRestartGrace     = 10 * time.Minute
)

// restartHold is a restart lease this leadership granted: from is when
// its StubRestarting was committed, grace its length.
type restartHold struct {
	from  time.Time
	grace time.Duration
}

// hold records a restart lease granted to machine, committed at from.
func (t *leaseTable) hold(machine string, from time.Time, grace time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holds == nil {
		t.holds = make(map[string]restartHold)
	}
	t.holds[machine] = restartHold{from: from, grace: grace}
}

// restartGrace is the restart lease a restarting machine may hold: the
// one this leadership granted, or MaxRestartGrace when an earlier leader
// granted it.
func (t *leaseTable) restartGrace(machine string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.holds[machine]; ok {
		return h.grace
	}
	return MaxRestartGrace
}

// restartExpired reports whether a restarting machine's restart lease has
// certainly run out: it was granted for the grace from when the stub sent
// its request, which arrived before the last renewal this leadership
// counts (or before this leadership began).
func (t *leaseTable) restartExpired(machine string, now time.Time) bool {
	return t.silence(machine, now) > t.restartGrace(machine)+leaseMargin
}

// back reports whether the stub of a restarting machine is its new
// incarnation: it echoed a token issued after the restart was committed.
// The stub that stopped sent its last renewal before it asked for the
// restart lease, so it never echoes such a token; the new one lowered the
// lease file to a lease of its own before its first renewal (see
// stub.lowerLease), so the machine's lease is the plain one again. When
// an earlier leader granted the restart, every token of this leadership
// was issued after it.
func (t *leaseTable) back(machine string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	from := t.since
	if h, ok := t.holds[machine]; ok {
		from = h.from
	}
	for _, p := range t.proof[machine] {
		if !p.issued.Before(from) {
			return true
		}
	}
	return false
}

// grantRestart commits that the stub of machine is restarting and returns
// the lease to grant it, or false to grant none (the group does not apply
// StubRestarting yet, no restart grace is set, or the machine is not up:
// its lease may have expired and its work moved). The caller has checked
// leadership since the request arrived and counted it as a renewal.
func (s *Server) grantRestart(t *leaseTable, machine string) (time.Duration, bool) {
	grace := s.cfg.RestartGrace
	if grace <= 0 || !s.groupApplies(fsm.StubRestartingType) {
		return 0, false
	}
	res, err := s.apply(fsm.StubRestartingType, fsm.StubRestarting{At: time.Now().UTC(), Machine: machine})
	switch {
	case err != nil:
		s.log.Warn("commit stub restarting failed", "machine", machine, "err", err)
		return 0, false
	case res.Err != nil:
		s.log.Info("no restart lease for the machine", "machine", machine, "err", res.Err)
		return 0, false
	}
	t.hold(machine, time.Now(), grace)
	s.log.Info("machine restarting: its jobs run on", "machine", machine, "grace", grace)
	return grace, true
}

// restartLeaseResponse is the answer granting a restart lease.
func restartLeaseResponse(grace time.Duration, machineIndex uint64) client.LeaseResponse {
	return client.LeaseResponse{LeaseMS: grace.Milliseconds(), RenewMS: LeaseRenewInterval.Milliseconds(), MachineIndex: machineIndex, Restarting: true}
}
