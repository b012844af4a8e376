// Package dispatch is the leader's dispatcher: it sends the stubs the
// Starts of placed attempts and the Signals the database owes them (kill,
// restart, suspend, resume), level-triggered from the committed state, so
// that a new leader simply sends again what is still owed and stubs
// ignore repeats. The Starts a pass owes one stub go in one request; the
// CHILD_REGISTERs a stub answers with are committed at once. At most
// sendSlots requests are in flight, so a pass owing a thousand stubs does
// not dial them all at once.
//
// It owns the soft memory of the sends (in flight, acknowledged, failed
// and when due again) and the form of a Start. It does not decide what is
// owed (the fsm does: OwedSends and the instances' states) nor where an
// attempt runs (server/planner), and it commits nothing but the answered
// registers, through the commit path it is given. It reaches the server
// through a duty.Handle and the functions of its Config.
package dispatch
