// Package duty is the handle a leader duty holds on the server it runs
// on, in place of the whole server: commit a command, read the database
// and wait for its next change, ask whether every server of the group
// applies a command type, and log. What else a duty needs (a client for a
// stub, its metrics, a setting) it is given by name when it is made.
//
// It owns that interface and nothing else: it implements nothing, starts
// nothing and imports only fsm. The server implements Handle over its
// Raft apply helper and its copy of the database; a duty's unit tests
// implement it over a real fsm.FSM of their own.
package duty
