// Package testwait is the one poll-until helper of the module's tests:
// a test that waits for something to become true (a leader elected, a job
// ended, a count reached) polls for it with For or Until, under a
// deadline, instead of sleeping and hoping.
//
// It owns the polling loop, its interval and the failure message. It does
// not own what is waited for: the condition is the caller's, and so is the
// timeout, which each test sizes for its own work. It imports nothing of
// the module and is imported only by tests and test helpers
// (server/servertest).
package testwait
