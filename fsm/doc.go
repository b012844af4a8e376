// Package fsm is netmgr's replicated database: machines, jobs and their
// instances, changed only by applying commands from the Raft log.
//
// It owns the log format. Every entry is one type byte (a MessageType,
// numbered by hand and never reused) followed by a JSON body; entries must
// stay decodable forever. Apply is a pure function of (state, entry): no
// clocks, randomness, I/O or map-order dependence. Times and identities are
// stamped by the proposer. Apply re-checks the deterministic invariants
// (machine up, free slots, attempt current) and drops what violates them,
// so a stale or duplicated Place can never overcommit a machine or start an
// instance twice; it never runs the matcher.
//
// Whatever happens exactly once is decided by one committed entry: a
// dependent job is released or cancelled when its dependency's end is
// applied (dependencies.go), and each firing of a cron job is one CronFire
// entry carrying its scheduled time, which Apply turns into one run job
// per (job, time) and ignores when that time has already been decided
// (cron.go). The leader computes which firings are due from the committed
// state (CronDue); Apply never parses a schedule or reads a clock. A
// finished job leaves the database by one JobsExpire entry carrying the
// leader's cutoff time and count, which removes exactly the jobs
// ExpiredJobs names at that index on every replica (expire.go). A gang
// job's assignments apply all or none, and the end of one of its attempts
// decides, in the same entry, whether the others stop or start again
// (gang.go).
//
// What an entry produced for the record kept outside the database, its
// events and the attempts it ended (each with the attempt that replaced
// it), goes to a Recorder after the lock is released (record.go); the
// servers keep it in their history. It is derived from the entry alone
// and never read back, so it is not state.
//
// It is not the wire format (package client) and does no networking.
package fsm
