// Package membership is the leader's membership duty: it turns the
// gossip pool into database changes and Raft voters. On every pass
// (Watcher.Reconcile) it commits StubJoin for a live stub the database
// does not hold as up (with the facts its renewals carried, else fetched
// from the stub), StubLeave for an up or unreachable machine that gossip
// reports failed or gone, or has never mentioned after absentGrace, and
// adds as a voter every live server outside the Raft configuration, once
// it passed the certificate admission check when Raft runs over TLS. It
// hands the machines of the database that gossip does not hold alive to
// server/rejoin, which joins their pools.
//
// It owns those decisions and the soft state of one leadership: the
// joins in flight and when the leadership began. It does not own the
// gossip node or the pool's view of it, the lease table, the facts stubs
// send with their renewals, the translation of those facts into the
// log's form, Raft, or the certificate check itself (server/raftnode);
// the server hands each in by name in Config. It reaches the database
// only through a duty.Handle.
package membership
