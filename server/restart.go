package server

import (
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/lease"
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
	MaxRestartGrace     = lease.MaxRestartGrace
)

// grantRestart commits that the stub of machine is restarting and returns
// the lease to grant it, or false to grant none (the group does not apply
// StubRestarting yet, no restart grace is set, or the machine is not up:
// its lease may have expired and its work moved). The caller has checked
// leadership since the request arrived and counted it as a renewal.
func (s *Server) grantRestart(t *lease.Table, machine string) (time.Duration, bool) {
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
	t.Hold(machine, time.Now(), grace)
	s.log.Info("machine restarting: its jobs run on", "machine", machine, "grace", grace)
	return grace, true
}

// restartLeaseResponse is the answer granting a restart lease.
func restartLeaseResponse(grace time.Duration, machineIndex uint64) client.LeaseResponse {
	return client.LeaseResponse{LeaseMS: grace.Milliseconds(), RenewMS: LeaseRenewInterval.Milliseconds(), MachineIndex: machineIndex, Restarting: true}
}
