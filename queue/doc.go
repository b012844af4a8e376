// Package queue decides the order and admission of the work waiting to
// run: higher queue priority first, then earlier submission (by the Raft
// index of the Submit command), then job id and instance number, so every
// server that orders the same items gets the same sequence.
//
// One scheduling pass of the leader uses it like this:
//
//  1. CheckSubmit at submit time refuses a job its queue cannot take
//     (nq_maxsize, nq_maxmem).
//  2. Order sorts the waiting instances.
//  3. NewActive starts from the running counts; each instance is admitted
//     by Active.Admit under nq_maxactive and counted by Active.Take once
//     placed.
//  4. The first job that cannot be placed for lack of capacity is the
//     head. Shadow computes, from the declared ends (DeclaredEnd) of what
//     occupies the capacity it needs, when it will be able to start; a
//     later job may take capacity the head competes for only when
//     MayBackfill says it will have ended by then (EASY backfill), so
//     streams of small jobs cannot starve a large one.
//
// What it is not: queue takes plain values and imports nothing else of
// netmgr; it reads no clock (times come in as arguments), keeps no state
// between passes and does not decide where work runs (package matcher
// does).
package queue
