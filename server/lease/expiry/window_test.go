package expiry

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/server/lease"
)

// TestStatementWindowLeavesARenewal checks the outage timing against the
// stubs' renewals: whatever the phase of a machine's renewals (every
// 0.5 s, stub.defaultRenewEvery, each proving a lease up to 0.2 s shorter
// than lease.Duration from its arrival, for the request's round trip and
// the token's age), one of them proves the lease held throughout
// statementWindow, so a leader that still renews the pool can expire a
// dead machine's lease as soon as the plain rule allows.
func TestStatementWindowLeavesARenewal(t *testing.T) {
	const (
		renewEvery = 500 * time.Millisecond
		shortfall  = 200 * time.Millisecond
	)
	base := time.Unix(1_000_000, 0)
	now := base.Add(10 * time.Second)
	from, to := statementWindow(now)
	for phase := time.Duration(0); phase < renewEvery; phase += 10 * time.Millisecond {
		found := false
		for at := base.Add(phase); at.Before(now); at = at.Add(renewEvery) {
			if !at.After(from) && !at.Add(lease.Duration-shortfall).Before(to) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("renewals every %v at phase %v: none arrived by %v and held to %v",
				renewEvery, phase, from.Sub(now), to.Sub(now))
		}
	}
}
