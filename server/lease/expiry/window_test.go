package expiry

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/lease"
)

// TestStatementWindowLeavesARenewal checks the outage timing against the
// stubs' renewals, at every pool size's timing (lease.TimingFor):
// whatever the phase of a machine's renewals (every renewal interval,
// each proving a lease up to 0.2 s shorter than the granted one from its
// arrival, for the request's round trip and the token's age), one of
// them proves the lease held throughout statementWindow, so a leader
// that still renews the pool can expire a dead machine's lease as soon
// as the plain rule allows.
func TestStatementWindowLeavesARenewal(t *testing.T) {
	const shortfall = 200 * time.Millisecond
	base := time.Unix(1_000_000, 0)
	now := base.Add(30 * time.Second)
	for _, pool := range []int{1, 1000, 1666, 1667, 2000, 5000, 9999, 10000, 50000} {
		timing := lease.TimingFor(pool)
		from, to := statementWindow(now, client.OutageVouchFor(timing.Renew))
		for phase := time.Duration(0); phase < timing.Renew; phase += 10 * time.Millisecond {
			found := false
			for at := base.Add(phase); at.Before(now); at = at.Add(timing.Renew) {
				if !at.After(from) && !at.Add(timing.Duration-shortfall).Before(to) {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("pool %d, renewals every %v at phase %v: none arrived by %v and held to %v",
					pool, timing.Renew, phase, from.Sub(now), to.Sub(now))
			}
		}
	}
}
