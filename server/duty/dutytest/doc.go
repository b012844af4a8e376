// Package dutytest is a duty.Handle for the unit tests of the leader's
// duties: a real fsm.FSM of the test's own, to which commands are
// applied directly at increasing indexes, or, after WithRaft, through a
// one-server Raft group in memory that the test's server leads.
//
// It owns nothing of a server: no gossip, no HTTP, no leases. The group's
// command level is the test's to set (SetLevel); it starts at
// fsm.CommandLevel, every type applied.
package dutytest
