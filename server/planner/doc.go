// Package planner is the leader's scheduler: with package queue (what may
// start, in what order) and package matcher (where), it turns a view of
// the database into one Place, the batch of assignments the leader
// proposes in a single Raft entry.
//
// A Pass is one scheduling pass over a consistent fsm.View: the queued
// instances in queue order (the interactive queue's first, then queue
// priority, the owners' fair-share ranks, or with Pass.Site the site
// policy script's priority, then submit order; fairshare.go, site.go, and
// package queue's doc, *Fair share*), admitted under each queue's nq_maxactive and each owner's
// nq_maxuser_active, matched one by one against a
// matcher.Pool whose counts grow as it assigns, with EASY backfill around
// the head job (the first that waits for capacity). A gang job's
// instances are matched together and placed all or none (gang.go), and
// each queue's placement policy (backfill, gang, dedicated, spread;
// policy.go) shapes its jobs' matches in the same pass. Three callers share
// it, so they cannot disagree:
//
//   - the leader's scheduler (server/scheduler.go) calls
//     Cache.Pass(...).Limit(MaxPlace).Place() after every commit, unless
//     MayPlace says no machine with its stub up has a slot free (a full
//     pool's backlog costs it a look at the fsm's index of machines with
//     a free slot, not a pass); the benchmark (cmd/netmgr-bench, the pass
//     suite) calls New(...).Place(), unlimited;
//   - a submit (server/submit.go) calls PlanSubmit, which starts a new
//     job in the entry that creates it when nothing else waits, and
//     otherwise says why no machine could run it (unrunnable.go);
//   - `netstatus --why` (server/http_why.go) replays Run and reports the
//     pass's answer for each instance of one job.
//
// Reservable picks machines for a reservation by the matcher's own
// ranking.
//
// What it is not: planner reads no clock (now is an argument), draws no
// random numbers and does not depend on map iteration order, so the same
// view, liveness and time give the same plan. What it keeps between
// passes (a Cache, the leader's) changes what a pass costs, not what it
// plans (TestCacheAgainstNew).
//
// # What a pass costs
//
// A pass over 10,000 machines and 100,000 waiting instances used to
// build every machine's view and matcher.Pool (18 ms) and order and
// visit every instance (19 ms) after every commit. Now:
//
//   - A Cache keeps the views and the Pool between the leader's passes
//     and rebuilds a machine's only when its record or active work moved
//     (fsm.View.MachineVersion), its liveness did, a reservation names it,
//     or the last pass took from it (matcher.Pool.Replace, Changed). A
//     machine seen for the first time, or a restored state, rebuilds all.
//   - The pass orders and visits jobs, not instances (batch: a job's
//     instances are consecutive in queue order); Place stops at a job's
//     first instance that finds no machine (the rest would find none).
//   - The Cache remembers the jobs no machine matched (keys, binaries,
//     mounts, attributes, names: matcher.Result.Matching 0) until a
//     machine's name, keys, mounts or attributes change; Place passes
//     them by.
//   - A failed match is remembered for like requests while the Pool is
//     unchanged (matcher.Failures): a thousand jobs waiting for capacity
//     cost one match.
//   - The EASY head's planned start, which looks at every instance
//     running on its machines, is worked out only when a later job would
//     take one of them (shadowOf).
//   - The server keeps the liveness between passes too (server/liveness.go)
//     and names the machines whose liveness may have moved
//     (Cache.PassChanged), instead of a map of every machine built for
//     each pass (4.9-7.4 ms at 10,000, BenchmarkLiveness10k).
//
// BenchmarkPassScaleStuck (nothing waiting matches a machine): 0.4-0.7
// ms a pass, against 28-44 ms; BenchmarkPassScaleStuckCapacity (every
// job waits for capacity): 1.0-1.1 ms. A pass in which much can start
// still costs what it places (BenchmarkPassScaleFill).
//
// The planner takes plain values: the view, and a Liveness per machine
// that the server derives from gossip and its leases. It does not commit
// anything (the server proposes the Place through Raft) and it is not the
// FSM's re-check: Apply validates every assignment against the state it
// is applied to and never calls the planner. It imports fsm, matcher,
// queue and server/policy (the script's runner, a leaf), nothing else of
// netmgr.
//
// # Gang jobs: all at once or none
//
// A gang (gang, `netexec --gang`; JobSpec.Gang, a SubmitGang entry since
// command level 35, which an older replica refuses rather than place the
// instances one by one) needs all its instances running together. Three
// places make that hold, each deterministic:
//
//   - The planner (server/planner/gang.go) meets the gang's instances
//     together in queue order (a job's items are consecutive) and matches
//     them one by one against the pass's pool; if one finds no machine it
//     gives back what the others took (matcher.Pool.Release) and the Place
//     holds none of them. A gang that waits for capacity becomes the EASY
//     head if no job before it is: the machines it competes for are set
//     aside, and a later job may take them only if its run limit ends by
//     the shadow, the (N - free now)-th earliest declared end of what runs
//     there (queue.Shadow, as for any head). So free machines are not
//     handed to small jobs while the gang waits for the last one, and the
//     gang holds none of them either. The planned start and what the gang
//     needs (`gang of N: needs N machine slots at once, K could run it
//     now`) are the Held reason that `netstatus --why` prints. A gang
//     larger than its matching machines could ever hold never becomes the
//     head (it would set their machines aside forever); the submit says so
//     too (PlanSubmit's Unrunnable). The plan is a function of the view, liveness and
//     time, so a new leader makes the same one.
//   - The FSM (fsm/gang.go) applies a Place's assignments of a gang only if
//     there is one for every instance and each holds with the earlier ones
//     counted as taken (placeGang); otherwise it drops them all. A stale or
//     partial plan cannot start part of a gang.
//   - Ends (gangEnd, called where an attempt ends or is declared lost or
//     unknown: CHILD_TERM, LeaseExpired, StubLeave): an end that was asked
//     for (a kill, a restart, the gang's own stop) decides nothing. An
//     instance queued again (a restart policy, a lost lease of a
//     restartable job) breaks the gang with restart: every other active
//     instance is owed a restart signal (RestartRequested, as `netmgr
//     restart` does), a finished one gets its new attempt at once. Any
//     other end but a clean exit stops the others (KillRequested per
//     instance; queued ones are dequeued). The job then reads failed, not
//     killed.
//
// Fencing carries over from single instances: the planner plans a gang only
// when every instance is queued and out of backoff, and the FSM re-checks
// that each assignment names a queued current attempt, so the new attempts
// are placed only after every old attempt's end is committed (or its lease
// expired, which commits it). No two attempts of an instance overlap, and
// no two generations of a gang run at once.
//
// Each instance's Start carries the gang's machines in instance order
// (StartRequest.GangHosts); the stub writes them, one a line, to hostfile
// in the exec dir and sets NETMGR_GANG_HOSTS, _RANK, _SIZE and _HOSTFILE
// (stub/gang.go), the equivalent of Slurm's node list and PBS's node file.
// A stub that predates the field runs the instance without them.
//
// What it costs: a waiting gang is re-matched on every pass (N matches and
// N releases, where a single job stops at its first miss), and while it is
// the head, machines can idle until the gang's last machine frees, the
// price of never starving it. A gang instance is placed by the scheduler
// after its submit commits, not in the submit's own entry (SubmitPlace), so
// a gang starts one pass later than a single job would. The snapshot
// (version 11) records Gang in the job's record.
//
// # Placement policies side by side
//
// A queue's policy= (add_q; DeclaredQueue.Policy, in the database line of
// snapshot version 11; a load that sets it waits for command level 35 so no
// replica loads the queue without it) picks how its jobs are placed. The
// leader makes one pass over every waiting instance in queue priority then
// submit order (server/planner/pass.go), so the policies share one pool and
// one deterministic plan:
//
//   - backfill (the default, ""): queue order with EASY backfill around the
//     head job, as for every queue.
//   - gang: the FSM marks every job submitted to the queue a gang
//     (applySubmit), so placement, fencing, restarts and the host list are
//     a gang's, on every replica alike; PlanSubmit leaves such a job to
//     the scheduler.
//   - dedicated (space sharing): the pass counts the owners running on each
//     machine (server/planner/policy.go, built only when some queue is
//     dedicated) and narrows each match: a dedicated job only to machines
//     where nothing of another owner runs, any job away from machines where
//     a dedicated job of another owner runs. The FSM re-checks the same
//     rule for every assignment (dedicatedAllows, fsm/placement.go; free
//     for a pool without a dedicated queue), so a stale plan cannot break
//     it.
//   - spread (load sharing): the least-loaded machine first, as the
//     matcher's score does, and a waiting job of the queue never becomes
//     the EASY head, so it sets no machine aside for itself.
//
// What it costs: nothing for a pool without dedicated queues; with one, a
// map per machine built per pass and an O(machines) narrowing per match.
//
// # Licences
//
// A job asking for licences (JobSpec.Licenses, `--license matlab:2`)
// waits while the pool's declared count (`license matlab = 10`) less what
// active instances hold is short: the pass holds it with the reason
// `waiting for licence matlab: 10 of 10 in use, needs 2`, which `netstatus
// --why` prints, and counts what it places in the same pass (licenses.go);
// a gang needs its instances' licences all at once. A job no declared
// count could ever run is refused at submit (unrunnable). The FSM counts
// them again on Apply (fsm/doc.go, *Resources*).
//
// # Preemption
//
// With a queue that preempts (add_q preempt=requeue or suspend), the
// pass runs even on a full pool, notes the first job of such a queue left
// waiting for capacity, and Preemption picks its victims
// (preempt.go: fewest, lowest queue priority, newest first, gangs whole,
// each group checked with the FSM's own rule); Resumes, before Place,
// continues suspended victims whose preemptor ended. The scheduler
// commits each as a Preempt entry. What it costs: nothing without a
// preempting queue with waiting work; with one, a match per machine per
// victim tried for the preemptor's instances.
package planner
