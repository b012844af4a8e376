// Package retention is the leader's retention duty: now and then it looks
// for finished jobs past the retention (fsm.View.ExpiredJobs) and, when
// it finds some, commits one JobsExpire with its own time, which removes
// them on every server at that entry's index.
//
// It owns when to look and what to propose. It does not decide which
// jobs a JobsExpire removes (the fsm does, from the entry's cut-off and
// count, so every server removes the same) and it does not sweep a
// server's own history (server/history). It reaches the server only
// through a duty.Handle.
package retention
