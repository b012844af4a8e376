// Package queue orders the work waiting to run: higher priority first, then
// earlier submission (by the Raft index of the Submit command), then job id
// and instance number, so every server that orders the same items gets the
// same sequence.
//
// The leader's scheduler orders the waiting instances with Order, then asks
// package matcher for a machine for each in turn.
//
// What it is not: queue takes plain values and imports nothing else of
// netmgr; it reads no clock, keeps no state and does not decide where work
// runs (package matcher does). Admission under the queue limits (nq_maxsize,
// nq_maxactive, nq_maxrun, nq_maxmem) will live here but is not written yet.
package queue
