// Package outbox is the stub's durable outbox: one bbolt file in the
// stub's data dir holding the child events (CHILD_REGISTER, CHILD_TERM,
// kept outputs) that no server has answered yet, and a record of every
// attempt the data dir ever started (Record), so that a repeated Start
// after a restart starts nothing and a later stub knows what ran.
//
// Record writes an attempt's record and its events in one transaction
// and returns once they are on disk; writes of concurrent callers share
// one commit and fsync (groupcommit.go). The events are mirrored in
// memory (unsent.go), so the sender's Pending reads no file; Remove
// forgets answered events at once and drops them from the file with the
// next Record or 200 ms later, since a removal lost in a crash only
// sends an event again, which delivery at least once allows. A damaged
// file is named with the way back (move it aside: the supervisors'
// directories say what runs), never a panic from inside bbolt.
//
// It does not send anything, know the servers, or decide what an event
// says: the stub's runner records and its sender delivers.
package outbox
