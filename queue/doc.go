// Package queue decides the order and admission of the work waiting to
// run: the interactive queue's first (Limits.Interactive), then higher
// queue priority, then the owner's fair-share rank, then earlier
// submission (by the Raft index of the Submit command), then job id and
// instance number, so every server that orders the same items gets
// the same sequence.
//
// One scheduling pass of the leader uses it like this:
//
//  1. CheckSubmit at submit time refuses a job its queue cannot take
//     (nq_maxsize, nq_maxmem).
//  2. ShareRanks ranks the owners of waiting work by fair share; Order
//     sorts the waiting instances.
//  3. NewActive starts from the running counts; each instance is admitted
//     by Active.AdmitUser under nq_maxactive and nq_maxuser_active and
//     counted by Active.TakeUser once placed.
//  4. The first job that cannot be placed for lack of capacity is the
//     head. Shadow computes, from the declared ends (DeclaredEnd) of what
//     occupies the capacity it needs, when it will be able to start; a
//     later job may take capacity the head competes for only when
//     MayBackfill says it will have ended by then (EASY backfill), so
//     streams of small jobs cannot starve a large one.
//
// # Fair share
//
// The problem: in submit order, a user who queues 200 jobs makes everyone
// after wait for all of them. Fair share (Slurm's multifactor fair-share
// factor, HTCondor's user priority) orders waiting work, within one queue
// priority, by how much of the pool each owner and the owner's account
// used lately against the share the database gives them.
//
// Usage. Each attempt that ran is charged, when its end is applied, to
// its owner and to the owner's account (fsm/fairshare.go): slot-
// milliseconds, one per slot an instance holds (its --cpus, at least
// one) per millisecond from its committed StartedAt to its committed EndedAt, so
// a job of N instances costs N times one. A Usage is a value at a time;
// Charge decays the value to the end's time with the half-life
// (fairshare_halflife, DefaultHalfLife a week) and adds the charge. An
// end dated before the last charge (a new leader's clock behind) adds
// undecayed: never lost, time never backwards.
//
// Determinism. Floating point may give different bits on different CPUs
// (fused multiply-add, assembly exp), and replicas of one group may run
// on different ones, so nothing the state or the order depends on is a
// float. Decay is integer arithmetic: whole half-lives shift right; the
// fraction, to 32 bits, is a product of 2^(-2^-i) constants in 62-bit
// fixed point, each the exact integer square root of the one before
// (math/big at start-up), multiplied with 128-bit products. The order
// needs no clock: every usage is decayed to one time, the latest charge
// (fsm.View.UsageAt), and since decay scales everyone alike, any later
// time would give the same order. CompareShares compares usage/share
// ratios as exact 128-bit cross products. The factor 2^(-U/S) people see
// (Factor, netmgr share, netstatus --why) is a float, shown and never
// used to order. So every replica, and every new leader, before or after
// a snapshot restore (the usage is in the snapshot's header since version
// 13), orders identically.
//
// The order. The account with the least usage per share goes first; among
// equal accounts, the user with the least usage per share; then submit
// order. ShareRanks turns the owners' keys into integer ranks once per
// pass (Item.Share), so sorting 100,000 items costs one more integer
// comparison; the planner builds the keys (server/planner/fairshare.go),
// the one place a site policy script can later replace by ranks of its
// own. Queue priority stays above the rank; within a job, instances keep
// their order, so a gang's items stay together.
//
// Turning it on. Charging starts at a FairShareStart entry (command
// level 39), which the leader proposes once every server applies it: an
// older replica never applies an end without charging it. Until then all
// ranks are 0 and the order is today's.
//
// Per-user limits. nq_maxuser_queued (CheckUser) refuses a submit when
// the owner already holds that many unfinished jobs in the queue, at
// submit and again in Apply; nq_maxuser_active (Active.AdmitUser) holds an
// instance while its owner runs that many in the queue, and Apply drops a
// placement past it. Both are per queue, like Slurm's MaxSubmitJobsPerUser
// and MaxJobsPerUser.
//
// What it costs: one map lookup per job and one rank comparison per item
// compare per pass (BenchmarkPassFairShare in server/planner); a map of
// (queue, user) counts in the database's indexes.
//
// What it is not: queue takes plain values and imports nothing else of
// netmgr; it reads no clock (times come in as arguments), keeps no state
// between passes and does not decide where work runs (package matcher
// does).
package queue
