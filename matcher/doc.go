// Package matcher decides where one instance of a job should run: given the
// instance's requirements and the machines the scheduler knows of, it
// returns the best feasible machine, or none together with the reasons every
// machine was turned down.
//
// It is the paper's "pattern matching algorithm ... with a simple, but
// effective load-balancing algorithm", built as a pipeline of filters then
// scorers (see New). Filters remove machines that cannot take the instance
// and count, per filter, how many they removed; scorers rank the survivors;
// a deterministic hash of (job, instance, machine name) breaks ties, so the
// same input always gives the same answer while different jobs spread over
// equal machines.
//
// A Pool holds the machines for one planning round: it indexes their keys
// once and lets the scheduler place a whole batch of instances, calling Take
// after each placement so the next Match sees the machine's new load.
//
// What it is not: matcher keeps no state between rounds, reads no clock,
// draws no random numbers and imports nothing else of netmgr. It does not
// order waiting work (package queue does), does not decide whether a queue
// may start more work, and does not record placements: the leader proposes
// them through Raft and the FSM re-checks the invariants it can check
// deterministically. Machine views are plain values built by the server.
package matcher
