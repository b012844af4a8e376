// Package lease is the leader's table of stub leases: when each machine
// last renewed, the load, own load and owner idleness it reported then,
// what it proved by echoing the token of an earlier answer (that its
// lease provably held over a span, the pool size it counts and the
// outage grace it was told), the restart leases this leadership granted,
// and the pool's join order with the quorum check of the outage ride-out
// (PoolOrder.QuorumFrom).
//
// It owns the arithmetic of leases and proofs and nothing else: it does
// not talk to Raft, stubs or gossip, and it decides no expiry. The
// server's leader asks it (Silence, Expired, Held, Grace, Knows, Back)
// and commits what follows. It is soft state: a new leader starts a new
// Table, and tokens of another leadership prove nothing to it. Every
// method may be called from several goroutines.
package lease
