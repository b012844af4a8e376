// Package boltcheck tells whether a bbolt file is whole before the
// program opens it for writing, so that a damaged file stops the program
// with an error naming it rather than a panic from inside bbolt.
//
// bbolt trusts its file: a page that is not what its parent says, or a
// file shorter than its meta page claims, makes it panic, and it meets
// most of them in a goroutine of its own (rebuilding the free-page list
// at open when, as netmgr has it, that list is not written to disk),
// where no caller can recover. Check therefore opens the file read-only
// and walks every bucket, key and value in a goroutine that turns panics
// and memory faults into an error first; Protect runs the real open the
// same way, for what the walk cannot see.
//
// It does not repair anything, and it does not guard reads after the
// open: a page damaged while the program runs still panics.
//
// It knows nothing of the state machine: it lives under fsm, as dblang
// does, because both the server (raft.db) and the stub (its outbox)
// import it, and fsm is the room below both.
package boltcheck
