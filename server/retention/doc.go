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
//
// By default (netmgr server's flags) a finished job stays 24 hours and at
// most 100,000 finished jobs stay (server.DefaultJobRetentionCount). The
// duration is for people, who look at a day's jobs; the count is for the
// servers, whose memory, snapshots and restart time grow with every job
// kept (about 1.9 KiB of heap and 260 bytes of snapshot each): it binds
// only a pool finishing more than some 70 jobs a minute, and holds a
// 10,000-machine pool (4 slots each) of hour-long jobs, which would keep a million
// finished jobs a day (1.9 GiB of heap, 250 MiB snapshots, 7 s restarts),
// to a tenth of that.
package retention
