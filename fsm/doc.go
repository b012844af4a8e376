// Package fsm is netmgr's replicated database: machines, jobs and their
// instances, changed only by applying commands from the Raft log.
//
// It owns the log format. Every entry is one type byte (a MessageType,
// numbered by hand and never reused) followed by a JSON body; entries must
// stay decodable forever. Apply is a pure function of (state, entry): no
// clocks, randomness, I/O or map-order dependence. Times and identities are
// stamped by the proposer. Apply re-checks the deterministic invariants
// (machine up, free slots, attempt current) and drops what violates them,
// so a stale or duplicated Place can never overcommit a machine or start an
// instance twice; it never runs the matcher.
//
// Whatever happens exactly once is decided by one committed entry: a
// dependent job is released or cancelled when its dependency's end is
// applied (dependencies.go), and each firing of a cron job is one CronFire
// entry carrying its scheduled time, which Apply turns into one run job
// per (job, time) and ignores when that time has already been decided
// (cron.go). The leader computes which firings are due from the committed
// state (CronDue); Apply never parses a schedule or reads a clock. A
// finished job leaves the database by one JobsExpire entry carrying the
// leader's cutoff time and count, which removes exactly the jobs
// ExpiredJobs names at that index on every replica (expire.go). A gang
// job's assignments apply all or none, and the end of one of its attempts
// decides, in the same entry, whether the others stop or start again
// (gang.go).
//
// What an entry produced for the record kept outside the database, its
// events and the attempts it ended (each with the attempt that replaced
// it), goes to a Recorder after the lock is released (record.go); the
// servers keep it in their history. It is derived from the entry alone
// and never read back, so it is not state.
//
// Fair share (fairshare.go; the design is package queue's, *Fair
// share*): from a FairShareStart entry on, every attempt end that ran
// charges its owner and the owner's account in integer slot-milliseconds
// from committed times (setState, when an instance first finishes), and
// the database's accounts, shares, half-life and per-user queue limits
// (nq_maxuser_queued at submit, nq_maxuser_active at place) are enforced
// in Apply. The usage is in the snapshot's header since version 13.
//
// Prime time (primetime.go): a queue's window opens and closes by
// PrimeTimeSwitch entries the leader proposes, each with the window's
// edge; Apply records it once and every limit check reads the values in
// force (DeclaredQueue.InForce). The states are in the snapshot's header
// since version 15.
//
// Preemption (preempt.go): one Preempt entry (level 44) decides that a
// preempting queue's job takes running attempts of strictly
// lower-priority queues, each job's all or none (a gang whole). requeue
// owes each victim its stop; its CHILD_TERM ends it preempted and queues
// the next attempt, no restart counted. suspend suspends each victim at
// once and lends its slot and resources (Instance.lent: active in its
// queue, absent from its machine's counts) until a Preempt with Resume,
// which applies only once the preemptor ended and the machine has room.
// Instance.PreemptedBy and Preempt are in the job's record since
// snapshot version 15.
//
// It is not the wire format (package client) and does no networking.
//
// # Snapshots
//
// A snapshot does not stop the world (snapshot_capture.go). Raft calls
// Snapshot on its FSM goroutine, so while it runs no entry applies: it
// takes the lock only to copy what is small (header, database, machines,
// reservations, tokens, pending mail; time in proportion to the machines)
// and to register a capture. Persist, on raft's snapshot goroutine, writes
// the jobs in id order, 256 at a time, each chunk holding FSM.write (the
// mutex Applies take before the read-write lock, which Persist never
// takes), and Applies run between chunks; after each chunk it sleeps as
// long as the chunk took, so that it uses at most half a core. Before an Apply changes or removes a job that
// existed at the snapshot's index and that the encoder has not written
// yet, db.edit copies it into the capture, once (cloneJob: everything but
// the spec, which never changes); the encoder writes the copy if there is
// one, else the live job. So the bytes are exactly those of the whole
// state encoded at once at that index, in the format snapshot.go
// describes, and Persist streams them. Every Apply path that changes an
// existing job calls edit first; one that did not would leave a job whose
// ModifyIndex (or an instance's) is past the snapshot's index without a
// copy, and Persist fails rather than write it. The capture ends when the
// jobs are written (or at Release). At 1M jobs an Apply waits at most a
// chunk's encoding (about a millisecond), where every commit waited for
// the whole (3.8 s) before; a read waits for no part of a snapshot, not
// even behind a waiting Apply, which holds no lock reads take. The cost
// is a copy of each job changed while a Persist runs. Tests
// (snapshot_capture_test.go): bytes equal to the encoding at once on
// random generated states and their restores; Applies between chunks and
// concurrently (-race) give the state at the index; every edit call is
// covered (removing any one fails a test); a read completes while
// Persist holds a chunk and an Apply waits for it.
//
// # Dependent jobs
//
// Dependent jobs (fsm/dependencies.go). fsm.JobSpec carries the resolved
// dependencies as ids: After, AfterOK, AfterNotOK ([]uint64). The server
// resolves the names and ids the user gave (client.JobSpec.After etc.,
// []string) on the leader at submit (server/dependencies.go,
// resolveDependencies): an id must exist; a name must name one job, or
// several of which exactly one is queued, held or running; anything else is
// refused before a command is proposed. Apply re-checks that every id names
// an existing job with a lower id than the new one (validateDependencies),
// which is also why no cycle can be built: every edge points to an older
// job.
//
// A job with dependencies is created with its instances in a new state,
// InstanceHeld, outside the queue and every index but its queue's count of
// unfinished jobs; the job's state is held (the API says held(dependency)).
// It is decided, never on a clock, at two points, both inside Apply:
//
//  1. at submit, if its dependencies have already decided it;
//  2. at the end of each entry that ended a job: refreshDone, which every
//     instance state change goes through, notes the job going from
//     unfinished to finished (db.ended); once the entry's command is
//     applied, FSM.apply calls flushEnded (fsm/db.go), which calls
//     resolveDependents for each noted job still finished. That walks
//     dependents[jobID] — a derived index (never snapshotted, rebuilt by
//     reindex in ascending job id order, appended to in submit order, so
//     ascending too) of the held jobs that name the job — and decides each
//     still-held one. Deciding at the end of the entry, not at the state
//     change, matters: a ChildTerm of a failed attempt whose restart
//     policy queues a new one in the same entry ends the job only for a
//     moment, and must release or cancel nothing (the chaos suite's
//     dependency chains found that bug). flushEnded runs before flushMail,
//     so the entry's mail sees the cancellations it caused.
//
// Deciding (decide) looks at every dependency in a fixed order (after,
// afterok, afternotok, each in the spec's order) with Dependency.Verdict:
// waiting while the dependency has not finished; after is satisfied by any
// end, afterok by JobDone only, afternotok by anything else (failed,
// signalled, lost, killed, cancelled). If any verdict is "never", the job
// is cancelled: every held instance ends InstanceCancelled (a finished
// state; job state cancelled, API cancelled(dependency)) with Reason
// "dependency: afterok job 12 (build) failed" and EndedAt the deciding
// dependency's end time (the submit's time when it was decided at submit),
// and a job-cancelled event. If all are satisfied, the held instances
// become queued at that index (job-released event) and the leader's next
// scheduling pass, which every commit wakes, places them. Otherwise it
// stays held. A cancelled job has finished, so its own dependents are
// decided in the same Apply (recursion bounded by the chain's length).
// netkill of a held job kills its held instances as it does queued ones;
// its end decides its dependents.
//
// Everything the decision reads is in the state (instance states and end
// times), and the order of decisions is the ascending job id order, so
// every replica makes the same decisions at the same index, and a replica
// restored from a snapshot rebuilds dependents and continues identically
// (fsm/dependencies_test.go: outcomes independent of the order the
// dependencies end in, and byte-identical replicas across batching and two
// snapshot/restore "failovers", with kills and duplicated entries).
//
// `netstatus --why` on a held job answers from the server (whyHeld):
// "held(dependency): waits for job 12 (running) to succeed"; `GET /v1/jobs`
// adds dependencies (kind, id, name, state, verdict) to each job.
//
// # Cron jobs
//
// Cron jobs (fsm/cron.go, fsm/cron_due.go, server/cron). A job whose
// spec has Cron is a template: it is created with no instances (so it never
// counts as an unfinished job of its queue and is never placed) and a
// CronState record: Through, the latest scheduled time decided, which
// starts at the submit's time; Runs, the run jobs' ids; Skips (the latest
// 256 firings that made no run, with the reason) and Skipped, their count;
// and Ended/EndedAt/EndedBy. Its state is scheduled, killed once ended. It
// is submitted as a SubmitCron entry (a Submit body of its own type, so an
// older replica stops rather than run the template as a job).
//
// Each firing is one CronFire entry: the job, the scheduled time, the
// earlier times it missed (up to 64, and a count of the rest) and whether
// the scheduled time itself is to be recorded as missed. Apply:
//
//  1. ignores the entry (Result.Stale) if the schedule has ended or the
//     scheduled time is at or before Through: a firing proposed twice — by
//     a leader that retried, or by a new leader that computed it again
//     before the old one's entry committed — is decided once;
//  2. records each listed missed time after Through as a skip, then sets
//     Through to the scheduled time;
//  3. records the time as missed (catchup=none), or as skipped for the
//     overlap (overlap=skip and the last run has not finished), or makes
//     the run: a job created as a Submit would (applySubmit), with the
//     template's spec less the cron options, named NAME.OWNER#N, with
//     `NETMGR_SCHEDULED_TIME=<time, RFC 3339, UTC>` appended to its
//     environment, and CronJob/Scheduled set. A run refused by its queue
//     is recorded as a skip with the refusal.
//
// Apply never parses the expression and reads no clock: the leader does
// both. After every commit and when the earliest next firing is due (a
// timer in the leader loop), cron.Firer.Fire reads the running schedules
// (View.CronJobs, a derived index) and calls `fsm.CronDue(job, schedule,
// now, grace)`, a pure function of the committed Through and the leader's
// clock: every schedule time after Through and at or before now is due; all
// but the latest were missed (no leader fired them); the latest runs under
// catchup=last, and under catchup=none only if at most grace late (5 s, or
// half the period for schedules more frequent than every 10 s). Because the
// leader starts from the committed Through after its barrier, a firing the
// previous leader committed is never proposed again, and one it did not
// commit is proposed by the next; a leader change shorter than the grace
// only delays a firing. Expressions are parsed with
// github.com/robfig/cron/v3 (five fields, an optional seconds field first,
// @hourly-style names, @every), in UTC unless they start with CRON_TZ= or
// TZ=; time/tzdata is embedded so every server resolves zone names alike.
// Submit refuses an expression that does not parse, a policy other than
// those named, catchup/overlap without cron, a cron job with dependencies,
// and a dependency on a cron job (which never ends).
//
// Kill of a cron job ends its schedule (cron-ended event); with Runs
// (`netkill --runs`) it also kills, in the same entry, every run not
// finished. `GET /v1/jobs` gives a cron job a cron object (schedule,
// policies, next firing computed by the answering server, through, runs,
// skips) and each run cron_job and scheduled; `netstatus -j` shows the
// schedule, next firing and counts on one row.
//
// Tests: fsm/cron_test.go (idempotent firing, the catch-up policies via
// CronDue, overlap, kill, spec rules, and a property test of 20 seeds where
// leaders fire from the committed state at random clocks with lost,
// duplicated and late-committed proposals: every scheduled time decided
// exactly once, replicas byte-identical across batching and a restore
// midway); the determinism generator adds cron submits, firings (fresh,
// late with missed times, stale, of a non-cron job) and kills; and two
// real-process tests in cmd/netmgr/cron_e2e_test.go:
// TestE2ECronAcrossLeaderKills SIGKILLs the leader just before each firing
// of `@every 2s` for a minute (every scheduled time ran once), and
// TestE2ECronCatchupAfterOutage SIGSTOPs every server for 7 s with a
// catchup=last and a catchup=none job.
//
// # Job retention
//
// A finished job does not stay in the replicated database for ever: the
// live state is bounded by live work, not by history. `netmgr server
// --job-retention D` (default 24h; 0 keeps finished jobs) is how long a job
// stays after it ended (its last instance's end time; the submit time for a
// job none of whose instances recorded one), and `--job-retention-count N`
// (default 100,000, server.DefaultJobRetentionCount, which says why; 0, no
// limit) how many finished jobs stay at most, the earliest ended going
// first. Both are per server; give every server the same (the
// leader's settings decide).
//
// *Decided by one entry.* The leader looks every retention/4 (at most every
// minute, at least every leader tick) at the committed state
// (fsm.View.ExpiredJobs) and, when something is due, proposes one
// `JobsExpire{At, Before: At - retention, Keep: count}`. Apply computes the
// same set again from the state at that index and removes it, so every
// replica drops the same jobs at the same index, whatever each replica's
// clock says; a retried, duplicated or late entry is harmless. One
// jobs-expired event per entry (`"3 finished jobs removed (jobs 4..9, ended
// before ...)"`), never one per job.
//
// *What stays.* Only a job all of whose instances finished goes, and only
// once nothing needs it: a job a held job names (after=, afterok=,
// afternotok=) stays until that job is decided, because decide reads its
// outcome again when the held job's other dependencies end; a cron job (a
// template) stays until its schedule ended (netkill) and all its runs are
// gone; a run goes like any job, and the live schedule fires on without it
// (the overlap check reads a missing previous run as ended).
//
// *What removal clears.* The job record and every index naming it: its name
// (byName), its idempotency key (a retry after the retention makes a new
// job), dependents, crons, and its queue's counts entry when empty
// (removeJob). Pending mail keeps its message, written when the job ended,
// and goes out as usual. nextJobID is in the snapshot header, so ids are
// never reused; and since only JobsExpire removes a job, an id below it
// that the database lacks is a removed one (View.JobExpired): the API
// answers `job N finished and was removed after the job retention (the
// servers' --job-retention)` (404) for it, and for a dependency naming it.
//
// *Cost.* The look and Apply walk all jobs (O(n), plus a sort of the
// finished ones when a count is set), once per look and once per entry. The
// benchmark's retention suite puts 2,000,000 jobs through the fsm with
// `--job-retention-count 10000`: the database, the heap, the snapshot (2.9
// MiB) and a real server's restart (1.1 s, 40 MiB RSS) stay where they are
// at 100,000 (doc/benchmark.md); a real server under churn with
// `--job-retention 2s` keeps a flat heap and anonymous RSS over 100,000
// jobs. What still grows with the rate of work is the Raft log between two
// snapshots (hashicorp/raft's defaults: a look every 120-240 s), which
// raft.db keeps and a restart replays.
//
// # Resources
//
// Issue 39's countable resources (command level 40, SubmitResources;
// snapshot version 14): a job asks per instance for CPUs (JobSpec.CPUs,
// slots: 0 is 1, today's one slot), GPUs (GPUs, of GPUType when set),
// generic resources by name (Gres), disk (DiskMB) and pool-wide licences
// (Licenses). A job asking for any (HasResources) is a SubmitResources
// entry, which an older replica refuses (it stops) rather than place it
// without counting; a database with `license NAME = N` is loaded only once
// every server applies level 40 (FeatureLicenses).
//
// *What a machine has* is Effective (effectiveResources): its slots
// (nprocs, by default the detected CPUs), its GPUs, declared as attributes
// (gpus=N, gpus.TYPE=N, written gpus={a100=4} in the languages, gpu_mem=MB)
// or else those its stub found with nvidia-smi (MachineFacts.GPUs), its
// generic resources (gres.NAME=N, gres={fpga=2}) and its disk (the free
// disk under the exec dir its stub reported when it joined, or disk=MB).
// Declaring them as attributes merges them as attributes do (machine over
// mtype over init file over detection) and lets a requirement name them.
// Joining reports the disk once: it is a budget for claims, not a live
// reading, and the stub enforces each claim (stub/doc.go).
//
// *What is held* is derived, never persisted: an active instance (placed,
// running, suspended, unknown) holds its CPUs, GPUs, gres and disk on its
// machine (db.usage) and its licences in the pool (db.usedLicenses), from
// its placement to its end; setIndexes and unsetIndexes keep both with
// the other per-machine counts, and reindex rebuilds them on restore.
// The same goes for db.open, the machines with fewer active instances
// than slots (View.MachinesWithFreeSlot), kept as the counts and a
// machine's slots change: the leader asks it after every commit whether
// a pass could place anything (planner.MayPlace), so that a full pool's
// backlog costs it nothing.
//
// *Placement.* The leader's matcher places an instance only where all
// are free (package matcher, the capacity filter) and holds it back while
// its licences are in use (server/planner, licenses.go: `waiting for
// licence matlab: 10 of 10 in use, needs 2`). Apply checks every one
// again (placeable, resourcesFit), a gang's earlier assignments counted
// as taken (taken.take), so a stale or duplicated Place can neither
// overcommit a machine's CPUs, GPUs, gres or disk nor the pool's licences.
//
// *Which GPUs.* place gives the instance the lowest free indices of its
// type (pickGPUs) and records them in Instance.GPUs: Apply decides, so
// every replica, and any leader after a change, agrees, and two active
// instances never hold one GPU. The leader sends them with the Start; the
// stub sets CUDA_VISIBLE_DEVICES and NETMGR_GPUS to exactly them. At most
// MaxGPUs (64) per machine are counted, held as one word.
//
// *Tests.* fsm/resources_test.go: every resource with gangs, reservations
// and licences across machines, and a randomized run of joins, submits,
// places and ends over three GPU machines that checks after every entry
// that no GPU is shared and no machine or licence is overcommitted, with
// a snapshot and restore midway whose replica must end in the same state.
//
// # Informational entries
//
// LeaderElected, ServerRemoved and SessionEvent (command level 41: who
// opened, took back or closed an interactive session, proposed by the
// server that relays it, server/session_events.go) change nothing but
// the event ring (events.go), which is derived and never snapshotted.
// They are proposed with IgnoreUnknownFlag, so a replica that predates
// the type skips it; SessionEvent is proposed only once every server
// applies it all the same, so that every replica's ring has it. So is a
// PolicyLoad of op error (policy.go: a site policy script's failed call,
// server/site_policy.go), which a load of the script precedes.
//
// # The site policy script
//
// PolicyLoad (command level 45, snapshot version 15) stores an admin's
// Starlark script whole, or clears it; Apply never compiles or runs it.
// The leader compiles it before proposing, each server compiles a load
// once (server/policy.Cache), and only the leader runs it: admit at
// submit, its answer carried in the committed Submit, and priority in
// the planner's pass over this package's View alone.
package fsm
