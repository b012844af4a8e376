// Package planner is the leader's scheduler: with package queue (what may
// start, in what order) and package matcher (where), it turns a view of
// the database into one Place, the batch of assignments the leader
// proposes in a single Raft entry.
//
// A Pass is one scheduling pass over a consistent fsm.View: the queued
// instances in queue order (queue priority, then submit order), admitted
// under each queue's nq_maxactive, matched one by one against a
// matcher.Pool whose counts grow as it assigns, with EASY backfill around
// the head job (the first that waits for capacity). A gang job's
// instances are matched together and placed all or none (gang.go), and
// each queue's placement policy (backfill, gang, dedicated, spread;
// policy.go) shapes its jobs' matches in the same pass. Three callers share
// it, so they cannot disagree:
//
//   - the leader's scheduler (server/scheduler.go) and the benchmark
//     (cmd/netmgr-bench, the pass suite) call New(...).Place();
//   - a submit (server/submit.go) calls PlanSubmit, which starts a new
//     job in the entry that creates it when nothing else waits, and
//     otherwise says why no machine could run it (unrunnable.go);
//   - `netstatus --why` (server/http_why.go) replays Run and reports the
//     pass's answer for each instance of one job.
//
// Reservable picks machines for a reservation by the matcher's own
// ranking.
//
// What it is not: planner keeps no state between passes, reads no clock
// (now is an argument), draws no random numbers and does not depend on map
// iteration order, so the same view, liveness and time give the same
// plan. It takes plain values: the view, and a Liveness per machine that
// the server derives from gossip and its leases. It does not commit
// anything (the server proposes the Place through Raft) and it is not the
// FSM's re-check: Apply validates every assignment against the state it
// is applied to and never calls the planner. It imports fsm, matcher and
// queue, nothing else of netmgr.
package planner
