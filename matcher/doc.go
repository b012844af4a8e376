// Package matcher decides where one instance of a job should run: given the
// instance's requirements and the machines the scheduler knows of, it
// returns the best feasible machine, or none together with the reasons every
// machine was turned down.
//
// It is the paper's "pattern matching algorithm ... with a simple, but
// effective load-balancing algorithm", built as a pipeline of filters then
// scorers (see New). Filters remove machines that cannot take the instance
// (requirement filters: binary key, required keys, numeric attributes,
// mounts, named machines; state filters: reservation, up, awake, free slot,
// max_per_machine, and capacity: free GPUs, CPUs, memory, generic
// resources and disk, each counted as its own cause, resources.go) and
// count, per filter and cause, how many
// they removed; Result.Why turns the counts into the line netstatus --why
// prints. Scorers rank the survivors by effective load and by how many
// instances of the same job they already run; a deterministic hash of (job,
// instance, machine name) breaks ties, so the same input always gives the
// same answer while different jobs spread over equal machines.
//
// A Pool holds the machines for one planning round. It indexes their keys
// and mounts once and keeps their state as bitsets, so a match is a few word
// operations per 64 machines per filter plus a visit of the machines that
// survive: one match among 10,000 machines takes tens of microseconds (see
// BenchmarkMatch10kClasses). The scheduler places a whole batch through one
// Pool, calling Take after each placement so the next match sees the
// machine's new load, memory, resources and instance counts. A match with
// resources costs about what one without does: the capacity filter ANDs
// bitsets of the machines with enough free that the Pool keeps per
// amount asked (BenchmarkMatch10kResources; netmgr-bench -only resources).
//
// What it is not: matcher keeps no state between rounds, reads no clock,
// draws no random numbers, does not depend on map order and imports nothing
// else of netmgr. It does not order waiting work (package queue does), does
// not decide whether a queue may start more work, and does not record
// placements: the leader proposes them through Raft and the FSM re-checks
// the invariants it can check deterministically. Machine views are plain
// values built by the server.
package matcher
