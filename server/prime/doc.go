// Package prime is the leader's prime-time duty: a PrimeTimeSwitch for
// every queue whose prime-time window (add_q prime={...}) opened or
// closed, and the next change the API shows.
//
// It owns when a switch is proposed: from the committed state (the
// queue's fsm.PrimeState) and the leader's clock, never from its own
// memory, so a leader change neither skips nor doubles a switch. A switch
// carries the scheduled instant of the window's edge (the latest change
// at or before now, dblang.Schedule.Last); a leader whose clock is behind
// the instant the state records proposes nothing. It does not decide what
// a switch does: Apply ignores one for an instant at or before the last,
// or to the state already in force (fsm's primetime.go), and applies the
// values in force everywhere the queue's limits are read. It reaches the
// server only through a duty.Handle.
package prime
