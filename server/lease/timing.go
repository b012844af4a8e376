package lease

import "time"

// The lease timing. A stub's lease holds for Duration from the moment it
// sent the renewal the leader granted. The leader declares a lease
// expired only Duration + Margin after the last renewal it received (and
// a new leader counts every lease as renewed at its election), and only
// then starts the machine's restartable jobs elsewhere. Since a renewal
// is received after it was sent, the stub has stopped its copies at least
// Margin before any replacement can be placed, whatever the clocks read:
// only their rates are assumed to agree within a few percent.
const (
	Duration = 3 * time.Second
	Margin   = time.Second
)

// MaxOutageGrace bounds the outage grace (server.Config.OutageGrace): a
// leader that does not know which grace an earlier one told a silent
// stub assumes this one.
const MaxOutageGrace = 24 * time.Hour

// MaxRestartGrace bounds the restart grace (server.Config.RestartGrace):
// a leader that did not grant a restarting machine's lease itself
// assumes this one.
const MaxRestartGrace = 10 * time.Minute
