// Package history is one server's record of what the group did: every
// event and every ended attempt of every instance, kept in a bbolt file
// beside the Raft log, for `netmgr history` (accounting, as sacct) and
// `netmgr events`.
//
// The records come from committed log entries, so every server writes the
// same ones under the same keys (the entry's Raft index, then the
// record's place in it): writing an entry twice changes nothing. The
// package tracks which indexes it holds: Applied is the highest entry
// written, and a snapshot restore over entries never applied here leaves
// a Gap that the server fills from a peer (Range on the peer, Fill here).
// Retention is local: Sweep drops what ended before a time.
//
// It is not replicated and knows nothing of Raft or of the database
// (package fsm): the server translates. Safe for concurrent use; writes
// are serialized by bbolt and every call blocks on its disk I/O.
package history
