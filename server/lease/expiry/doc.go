// Package expiry is the leader's lease-expiry duty: on every membership
// pass it declares expired (LeaseExpired) the leases of machines that
// stopped renewing, when the outage rule allows it, and those of
// restarting machines whose restart lease ran out.
//
// It owns the decision: the plain lease rule, the outage grace and the
// quorum of machines whose own leases provably held (statementWindow,
// expirable), which keeps it from starting elsewhere the work of a stub
// that may still hold it through an outage of the servers
// (stub/outage.go). It asks the lease table (package server/lease) what
// the renewals proved and the database which machines hold what; it
// does not grant renewals (the server's lease handler does) and it
// decides nothing of what an expiry does to the machine's work (the fsm
// does). It reaches the server only through a duty.Handle.
package expiry
