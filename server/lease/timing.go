package lease

import (
	"time"

	"github.com/netmgr/netmgr/client"
)

// The lease timing. A stub's lease holds for Duration from the moment it
// sent the renewal the leader granted. The leader declares a lease
// expired only Duration + Margin after the last renewal it received (and
// a new leader counts every lease as renewed at its election), and only
// then starts the machine's restartable jobs elsewhere. Since a renewal
// is received after it was sent, the stub has stopped its copies at least
// Margin before any replacement can be placed, whatever the clocks read:
// only their rates are assumed to agree within a few percent.
//
// Duration and Renew are the timing of a pool of up to 1,666 machines;
// a larger pool's is longer (TimingFor).
const (
	Duration = 3 * time.Second
	Renew    = 500 * time.Millisecond
	Margin   = time.Second
)

// The scaled timing (TimingFor). The renewal interval grows by
// RenewPerMachine for each machine (in steps of renewStep), so that the
// leader takes at most some 3,300 renewals a second whatever the pool's
// size, up to MaxRenew: 10,000 machines renew every 3 s.
//
// The outage rule fixes the lease: stubs whose renewals are an interval
// apart must all be saying their leases ran out when the first one's
// does, so a stub says so an interval plus 0.4 s before its end
// (client.OutageVouchFor), and the leader needs, within the lease less
// the cover, an answer's time and that, an interval of one renewal plus
// 0.4 s to prove a machine held its lease (server/lease/expiry's
// statementWindow): a lease of twice the interval plus 2 s, 3 s at 0.5 s
// as before. A dead machine's lease therefore expires 2R + 3 s after its
// last renewal, 9 s at MaxRenew: issue 36's 10 s at 10,000 machines is
// what bounds MaxRenew, and 3,300 renewals a second is what that costs.
const (
	RenewPerMachine = 300 * time.Microsecond
	renewStep       = 100 * time.Millisecond
	MaxRenew        = client.MaxRenewEvery
	MaxDuration     = 2*MaxRenew + Duration - 2*Renew
)

// Timing is what a leader grants a stub: a lease of Duration, to be
// renewed every Renew.
type Timing struct {
	Duration, Renew time.Duration
}

// TimingFor is the timing a leader grants in a pool of pool machines.
// It never shortens as the pool grows, and pools never shrink (machines
// are never forgotten), so a leader that does not know what an earlier
// one granted a machine may assume TimingFor of the pool it knows.
func TimingFor(pool int) Timing {
	renew := time.Duration(pool) * RenewPerMachine
	renew = min(max((renew+renewStep-1)/renewStep*renewStep, Renew), MaxRenew)
	return Timing{Duration: 2*renew + Duration - 2*Renew, Renew: renew}
}

// SuspectAfter is how long the leader goes without a renewal from a
// machine of a pool of pool before it suspects the machine: two renewal
// intervals.
func SuspectAfter(pool int) time.Duration {
	return 2 * TimingFor(pool).Renew
}

// MaxOutageGrace bounds the outage grace (server.Config.OutageGrace): a
// leader that does not know which grace an earlier one told a silent
// stub assumes this one.
const MaxOutageGrace = 24 * time.Hour

// MaxRestartGrace bounds the restart grace (server.Config.RestartGrace):
// a leader that did not grant a restarting machine's lease itself
// assumes this one.
const MaxRestartGrace = 10 * time.Minute
