package stub

import (
	"context"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// restartAskTimeout bounds the request for a restart lease: the leader
// commits StubRestarting before it answers. The stub's lease still holds
// meanwhile (a renewal at most defaultRenewEvery ago granted 3 s).
const restartAskTimeout = 2 * time.Second

// stopRenewing ends run and waits for it (at most the longest round,
// renewRound's at client.MaxRenewEvery) and reports whether it ended: once
// it has, the stub sends no renewal built after this call.
func (k *leaseKeeper) stopRenewing() bool {
	k.halted.Store(true)
	select {
	case <-k.halt:
	default:
		close(k.halt)
	}
	select {
	case <-k.done:
		return true
	case <-time.After(longestRound + time.Second):
		return false
	}
}

// restartLease stops renewing and asks the leader for a restart lease: a
// stub stopping to start again keeps its jobs running under the
// supervisor host, and their restartable ones must not stop at the plain
// lease. When the leader grants it (it then shows the machine restarting
// and starts the work elsewhere only once the restart lease ran out
// unrenewed on its side), the lease file gets the restart lease's end, and
// nothing writes the file after it: the new stub lowers it
// (supervisor.LowerLease) before it renews. It reports whether the lease
// was granted; if not, the stub leaves the pool as it would for good.
func (k *leaseKeeper) restartLease(ctx context.Context) bool {
	if !k.stopRenewing() {
		k.log.Warn("lease renewal did not stop; no restart lease", "machine", k.machine)
		return false
	}
	c := k.servers.leaseClient()
	if c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, restartAskTimeout)
	defer cancel()
	sent := supervisor.BootNow()
	resp, err := c.RenewLease(ctx, client.LeaseRequest{Machine: k.machine, Running: k.runner.runningAttempts(), Restarting: true})
	if err != nil || !resp.Restarting || resp.LeaseMS <= 0 {
		k.log.Info("no restart lease: leaving the pool", "machine", k.machine, "err", err)
		return false
	}
	lease := time.Duration(resp.LeaseMS) * time.Millisecond
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := supervisor.WriteLease(k.dataDir, sent, lease); err != nil {
		k.log.Error("record the restart lease for supervisors", "err", err)
		return false
	}
	k.final, k.published = true, sent+lease
	k.log.Info("restart lease granted: the jobs run on until the stub is back", "machine", k.machine, "lease", lease)
	return true
}
