// Package policy runs a site's policy script: a Starlark program
// (go.starlark.net: deterministic, sandboxed, no I/O, no load) that an
// admin installs with `netmgr admin policy load site.star`. It may define
// two functions, each optional:
//
//	admit(job, user)                 at submit, on the leader
//	priority(job, user, usage, now)  per waiting job, in the leader's pass
//
// admit returns None (accept), a string (refuse with that message), or a
// dict of changes to the named fields "queue", "time_limit" (seconds) and
// "priority" (an int from -1000 to 1000: the job's priority within its
// queue, higher first, before the fair-share factor or the script's
// priority and submit order; only admit sets it); the server checks them
// as it checks a submit's own. priority returns a
// number (int or float); within a queue, waiting work is taken highest
// number first, then in submit order, in place of the fair-share factor.
//
// The arguments are frozen dicts built afresh for each call, so nothing a
// call does reaches another:
//
//   - job: id, name, owner, queue, instances, waiting (its waiting
//     instances), cpus, gpus, memory_mb, licenses (dict), time_limit
//     (seconds, 0 for none), gang, submitted (Unix seconds), and free: the
//     pool's free_slots, free_cpus, free_gpus, free_memory_mb, and its
//     running and waiting instances;
//   - user: name, account, share, account_share, running and waiting
//     (the user's instances in every queue);
//   - usage: user and account, the decayed fair-share usage in
//     slot-seconds (0 while fair share is off);
//   - now: Unix seconds of the latest committed time the state holds (the
//     newest usage charge or the policy's load), never the wall clock, so
//     every server computes the same order from the same state.
//
// Every call has a step budget (Steps), and a pass's priority calls
// together another (PassSteps, through a Ranker); a call that errs, runs out of
// steps or returns a value of the wrong type returns an *Error naming the
// function and the script's line, and the caller applies the built-in
// order or acceptance. Package policy imports nothing of netmgr's: the
// server and its planner translate their state into the values here.
package policy
