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
//
// # History and durable events
//
// Job retention takes finished jobs out of the replicated state; the
// history keeps what users and admins ask of them afterwards (`netmgr
// history`, as Slurm's sacct reads slurmdbd) and the event log (`netmgr
// events`), on every server, outside the state machine.
//
// *What is recorded.* Every attempt of every instance when it ends, not
// only the last: job, instance, attempt, owner, queue, name, machine,
// state, exit code or signal, error and reason, user and system CPU, peak
// RSS, submit/placed/started/ended times, the Raft index of the entry that
// ended it, and ReplacedBy, the attempt that took its place (0: none). And
// every event. fsm derives both while it applies an entry, from the entry
// alone: setState notes an attempt entering a finished state, newAttempt
// records the one it replaces; at the end of the entry (flushRecord) the
// noted attempts still finished are recorded (one that ended and was
// restarted in the same entry is recorded once, replaced). A lost attempt
// whose result arrives later is recorded again by the later entry, which
// wins. Nothing of this is state: no command's outcome reads it, it is not
// snapshotted, and there is no new command type.
//
// *The feed.* FSM.SetRecorder hands, after each Apply/ApplyBatch and
// outside the FSM's lock, what the entries produced (fsm.Applied; the last
// one always names the last index applied, so the history knows how far the
// state has come), and a restore's Restored{Index}. The server's recorder
// puts it on a channel of 1,024 batches; a goroutine gathers what arrives
// for up to 100 ms and writes it in one bbolt transaction (one fsync, so
// the history's disk writes do not compete with each of Raft's: the
// sequential submit latency was the same with and without it, 22.2 vs 22.4
// ms median). A full channel blocks the recorder, and so Raft's apply
// goroutine: back-pressure, never a dropped record. Shutdown closes the
// channel only after Raft has stopped, and the writer drains it. Reads wait
// (up to 5 s) until the history holds what the state had applied when they
// came, so a job just ended is listed.
//
// *Keys, and why writing twice is harmless.* Events are keyed by (index,
// position in the entry), attempts by (job, instance, attempt) with the
// entry's index in the record; secondary buckets (end time, index, user,
// queue, machine, state, each followed by end time and id) serve the
// filters by a range scan of the most selective one. Every server derives
// the same records from the same entries, so a restart that applies the log
// again from the last snapshot rewrites the same keys.
//
// *Gaps.* A server brought up to date by InstallSnapshot (it was down while
// the others compacted their logs) never applies the entries the snapshot
// covers. The history's Applied mark says how far it holds; a restore to
// index S above it records the gap (Applied, S] and moves Applied to S. A
// goroutine then asks the other servers (from gossip) for the range, `GET
// /v1/history/range?after=A&through=T`: servers only (a server certificate
// acting for itself, like Raft's TLS layer insists), answered 409 by a
// server that lacks part of it (its own gap, or not yet applied), in pages
// of about 5,000 records; the asker files each page and shrinks its gap,
// and asks again every 2 s while one remains. A history lost with its file
// is filled the same way. A write that fails (full disk) is logged as an
// error; the records come back only by a restart's replay or a peer.
//
// *Why bbolt.* It is already in the binary (raft-boltdb), needs no cgo
// (SQLite would need cgo or a 10 MB pure-Go port and a second build story),
// is one file with ACID transactions, and ordered keys are all the queries
// need: time ranges and equality filters. Its single writer is not a limit
// here, since one goroutine writes.
//
// *Retention.* --history-retention (default 90 days, 0 keeps all) is per
// server; each server sweeps its own copy every tenth of the retention (at
// most hourly) by its own clock, in transactions of 10,000 records. The
// history is not replicated state, so no command is needed and the servers
// need not agree on the instant; a gap-fill skips nothing the sweep would
// keep.
//
// *Events.* `GET /v1/events` (and --follow) read the history, so they
// survive restarts, snapshot restores and leader changes, and since=
// selects by time across them. A follower answers the same as the leader
// (the tests read both); consistent reads still go to the leader. The
// in-memory ring stays in fsm for a server without a data dir.
package history
