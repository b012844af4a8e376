// Package rejoin is the leader's side of joining the machines' gossip
// pool again. A server restarted after its stubs' memberlist gave it up
// starts in a pool of its own: the stubs no longer gossip to it, and it
// knows none of them. Each stub joins its --join addresses and the
// servers it has seen while it sees no server (stub/rejoin.go); the
// leader joins from its side the machines the database holds and its
// gossip does not, so that the pools merge however the servers came back
// (at new addresses too) and as soon as it leads. The database holds each
// machine's API address, not its gossip address: the leader asks the stub
// there (GET /v1/facts) for the gossip address.
//
// It owns the rounds and each machine's backoff. It does not decide which
// machines gossip lacks (the server's membership watcher does, from the
// database and the pool, and hands them to Kick) and it commits nothing.
package rejoin
