// Package stub is the per-machine agent of netmgr: the paper's "stub"
// process that runs on every machine of the pool.
//
// A Stub serves a small HTTP/JSON API (wire types in package client):
//
//   - POST /v1/start starts one attempt of a job instance. It is idempotent
//     by (job id, instance, attempt): a repeat of an attempt this stub (or an
//     earlier stub on the same DataDir) already started answers 200 and
//     starts nothing.
//   - POST /v1/signal signals the whole process group of an attempt, with an
//     optional grace period after which the group gets SIGKILL.
//   - GET /v1/facts reports the machine: name, architecture (as uname -m
//     prints it), CPUs, memory, mounted file systems, load average.
//   - GET /v1/health answers 200 while the stub runs.
//
// Each attempt runs in its own directory <ExecDir>/<job>.<instance>.<attempt>
// (standard output and error go to the files "stdout" and "stderr" there),
// in its own process group, with the environment of the request plus
// NETMGR_JOB_ID, NETMGR_JOB_NAME, NETMGR_INSTANCE, NETMGR_ATTEMPT and
// NETMGR_MACHINE (and the stub's PATH when the request sets none).
//
// Credentials: when the stub runs as root and the request's Owner names an
// existing non-root user, the job runs with that user's uid, gid and
// supplementary groups, and the attempt directory belongs to that user; an
// Owner that does not exist fails the attempt (a CHILD_TERM with an error,
// exit code 127). When the stub does not run as root, every job runs as the
// stub's own user whatever the Owner says.
//
// When the job's process ends the stub SIGKILLs whatever is left of its
// process group and reaps it (the stub makes itself a child subreaper, so
// orphans of a job come back to it rather than to init); a process that
// leaves the group with setsid escapes this.
//
// Limits: a StartRequest may carry its queue's limits, kept with the
// running attempt. With MaxRunSeconds the stub sends SIGTERM to the
// attempt's process group that long after the attempt started — wall
// time, so time the group spends stopped by netmgr suspend counts — and
// SIGKILL GraceMS later (10 s when 0) if the group is still alive. With
// MaxMemMB one sampler for the whole stub walks /proc every 250 ms, sums
// the resident memory (RSS) of every process of each limited group and
// SIGKILLs a group above its limit at once; the largest sum seen is
// reported as MaxRSSKB when it exceeds what wait returned. Each of these
// signals is followed by SIGCONT so that a stopped group receives it. The
// attempt's CHILD_TERM then carries a Reason, whatever the exit status:
// "run limit of 3m20s exceeded" or "memory limit of 20 MB exceeded
// (resident 23 MB)"; the first limit to act names it. After Shutdown no
// limit is enforced any more.
//
// Events: CHILD_REGISTER (the job started, with its pid, which is also its
// process group) and CHILD_TERM (it ended: exit code, signal name without
// "SIG" and exit code 128+signal when a signal ended it, user/sys CPU and
// max RSS, or the exec error with exit code 127) are written to a
// bbolt outbox in DataDir before anything else happens — a Start is
// answered only once its CHILD_REGISTER is durable — and a sender delivers
// them to the servers with at-least-once semantics, in order per attempt,
// retrying with backoff until a server answers. Events survive a restart of
// the stub: a new stub on the same DataDir delivers what was left. A server
// answering an event with a 4xx status rejects it for good; the stub logs
// and drops it.
//
// Servers are learned from gossip: the stub joins the memberlist pool
// shared by servers and stubs, gossips its own client.NodeMeta (role
// "stub", its HTTP address, its load average, refreshed every 2 s) and
// tracks the members whose role is "server". Config.Servers and the
// Servers hint of each StartRequest add to that list.
//
// What the stub does not do yet: Shutdown leaves running jobs running and
// stops watching them (their CHILD_TERM is never reported, and a new stub
// answers a Signal for them with 404); a supervisor process that outlives
// the stub comes in a later issue. There is no lease, no owner policy
// (sleep on console activity) and no init file of extra facts.
package stub
