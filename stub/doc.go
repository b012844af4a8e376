// Package stub is the per-machine agent of netmgr: the paper's "stub"
// process that runs on every machine of the pool.
//
// A Stub serves a small HTTP/JSON API (wire types in package client):
//
//   - POST /v1/starts starts a batch of attempts of job instances, each
//     with its own result, which carries the attempt's CHILD_REGISTER. It
//     is idempotent by (job id, instance, attempt): a repeat of an attempt
//     this stub (or an earlier stub on the same DataDir) already started
//     answers 200 with the same REGISTER and starts nothing.
//   - POST /v1/signal signals the whole job of an attempt (its process group
//     and cgroup) through its supervisor, with an optional grace period
//     after which the job gets SIGKILL.
//   - GET /v1/facts reports the machine: name, architecture (as uname -m
//     prints it), CPUs, memory, mounted file systems, load average.
//   - GET /v1/health answers 200 while the stub runs.
//   - GET /metrics serves the stub's metrics in the Prometheus text format
//     (event backlog and delivery, start latency, lease, gossip health).
//
// Each attempt runs in its own directory
// <ExecDir>/<cluster>/<job>.<instance>.<attempt>, <cluster> naming the
// cluster's CA (standard output and error go to the files "stdout" and
// "stderr" there; execdirs.go says why the name, and how a directory that
// exists already is refused and an ended attempt's is removed after
// Config.ExecRetention),
// in its own process group, with the environment of the request plus
// NETMGR_JOB_ID, NETMGR_JOB_NAME, NETMGR_INSTANCE, NETMGR_ATTEMPT and
// NETMGR_MACHINE (and the stub's PATH when the request sets none); an
// instance of a gang job also gets NETMGR_GANG_HOSTS, NETMGR_GANG_RANK,
// NETMGR_GANG_SIZE and NETMGR_GANG_HOSTFILE, the host file written in its
// directory (gang.go).
//
// Credentials: when the stub runs as root and the request's Owner names an
// existing non-root user, the job runs with that user's uid, gid and
// supplementary groups, and the attempt directory belongs to that user; an
// Owner that does not exist fails the attempt (a CHILD_TERM with an error,
// exit code 127). When the stub does not run as root, every job runs as the
// stub's own user whatever the Owner says.
//
// Supervisors: the stub forks no job itself. Its attempts run under its
// supervisor host, the stub's own binary re-executed as `netmgr supervise
// --host` in a session of its own, which outlives the stub (package
// supervisor says how). The stub reaches it through one interface,
// supervisors (supervisors.go), which supervisor.Client implements, and
// in a simulated stub supervisor.Simulator (see Simulation). A Start is
// answered, and its CHILD_REGISTER recorded, only once the host reports
// that the job runs; the host pushes each job's result to the stub, which
// asks for it instead when no push can bring it. Shutdown leaves the
// supervisors and their jobs alone. A new stub on the same DataDir
// reattaches to every attempt not yet reported as ended: a result written
// meanwhile is recorded at once; a running supervisor (verified by pid,
// start time and boot id, never by a bare pid) is watched again, so
// Signal works as before; a supervisor that is gone without a result
// (killed, or the machine rebooted) makes the attempt lost: a CHILD_TERM
// with Error "lost: supervisor gone" and exit code -1, after what is left
// of the job is killed.
//
// Cgroups: where the machine offers a writable cgroup v2 tree (the cgroup2
// mount, /sys/fs/cgroup or /sys/fs/cgroup/unified, and the stub can
// create a cgroup under Config.CgroupParent or its own cgroup), each job
// runs in its own cgroup netmgr/<stub>/<job>.<instance>.<attempt>;
// otherwise jobs run in process groups; the stub logs which at start.
//
// Limits: a StartRequest may carry the attempt's limits (MaxRunSeconds,
// GraceMS, MaxMemMB: the smaller of its queue's and its job's) and the
// job's warning (WarnSignal, WarnLeadMS: a signal its lead before the run
// limit), which the attempt's supervisor enforces, so they hold while no
// stub runs. The attempt's CHILD_TERM then carries a Reason, whatever the
// exit status: "timeout: run limit of 3m20s exceeded" or "memory: memory
// limit of 20 MB exceeded (resident 23 MB)"; the first limit to act names
// it.
//
// Site scripts: Config.Prologue and Config.Epilogue run before and after
// every attempt (scripts.go); a failing one drains the machine until
// Reload, and a failing prologue ends the Start as the machine's fault.
//
// Events: CHILD_REGISTER (the job started, with its pid, which is also its
// process group) and CHILD_TERM (it ended: exit code, signal name without
// "SIG" and exit code 128+signal when a signal ended it, user/sys CPU and
// max RSS, or the exec error with exit code 127). A Start is answered only
// once the attempt's record is durable in a bbolt outbox in DataDir, and
// its answer carries the REGISTER; when the attempt ends, a copy of the
// REGISTER and the CHILD_TERM are written to the outbox before anything
// else happens, and a sender delivers them to the servers with
// at-least-once semantics, in order per attempt, retrying with backoff
// until a server answers. Events survive a restart of the stub: a new stub
// on the same DataDir delivers what was left. A server answering an event
// with a 4xx status rejects it for good; the stub logs and drops it.
//
// Servers are learned from gossip: the stub joins the memberlist pool
// shared by servers and stubs, gossips its own client.NodeMeta (role
// "stub", its HTTP address, and its load average at join) and tracks the
// members whose role is "server". Config.Servers and the Servers hint of
// each StartRequest add to that list. While the stub's view of the pool
// holds no live server (every server down, or given up by memberlist,
// which forgets a member 30 s after calling it dead), it joins its Join
// addresses and every server it has seen again, at once and then every
// 0.5-4 s, until one answers: a server group restarted after any outage
// finds its stubs without restarting them (rejoin.go). GET /v1/facts
// reports the stub's gossip address, so that a leader that does not see
// the machine in its pool can join it from its side.
//
// Load reaches the servers with the lease, not by gossip: every renewal
// (POST /v1/lease, every 0.5 s, lease.go) carries the load average
// (client.LeaseRequest.Load) once a server's answer says it takes it
// (client.LeaseResponse.TakesLoad, which every server sets), and the
// leader places work by the load of the last renewal. Only while no
// server has answered so does the stub re-gossip its metadata when the
// load moves by 0.05 or more (gossip.go, refreshLoad): a metadata change
// is broadcast to the whole pool, a renewal goes to the leader alone.
//
// Health: the stub watches what it needs of its machine to run jobs
// (health.go): free space and inodes in ExecDir and DataDir above
// Config.MinFreeDisk and MinFreeInodes (a statfs each every few seconds),
// an exec dir that takes new attempts' directories and files, and the
// site's health-check program (Config.HealthCheck). While one fails it
// drains the machine: every lease renewal carries the reason
// (LeaseRequest.Problem), the leader records it and places nothing there,
// and a Start that comes meanwhile is answered with a CHILD_TERM marked
// MachineFault (not started, exit code 127). An attempt that fails while
// a disk has a problem (its output could not be written), or that could
// not get its files, is marked MachineFault too: the servers queue it
// again without counting a restart. Running work is left alone, and the
// machine takes work again once the fault clears.
//
// The owner policy (Config.Owner, package stub/owner) puts the machine
// to sleep while its owner uses it: a console login, keyboard or mouse
// use, a load not caused by its own jobs, a site's load monitor, or a
// time outside the machine's availability windows. The verdict rides on
// every lease renewal (LeaseRequest.Asleep) and the leader records a
// change (MachineAsleep): no new work goes there. ownerpolicy.go acts on
// each change at once: it stops the running jobs (SIGSTOP), continues
// them when the machine wakes, and vacates them after VacateAfter. Its
// settings come from the flags, the init file and the database, which
// each lease renewal's answer carries (LeaseResponse.Owner), merged as
// attributes are (ownersettings.go): flags < init file < database; a
// job's queue may set its own vacate_after, keep_suspended or suspend=no
// (StartRequest.OwnerPolicy).
//
// A Start, from the request to the fork: http_starts.go (handleStarts) ->
// http.go (startOne: the lease check) -> runner_start.go (runner.start:
// claim the attempt, runner.spec: exec dir, credentials, environment,
// limits) -> supervisor.Client.Start (stub/supervisor/client.go) -> the
// host (supervisor/server.go, host.go: fork) -> back in runner.start, the
// attempt is recorded in the outbox, its CHILD_REGISTER goes in the
// answer, and runner.watch waits for the end.
// A CHILD_TERM is made in runner.go (runner.finish from the supervisor's
// Result, runner.lost when the supervisor is gone) or, for a job that
// could not be started, in runner_start.go (runner.recordExecFailure);
// each goes into the outbox (package stub/outbox, Outbox.Record) and
// sender.go delivers it.
//
// Files:
//
//	stub.go           Stub: New, Shutdown; sentinel errors
//	config.go         Config and its defaults
//	http.go           the API's routes and handlers; parseSignal
//	http_starts.go    POST /v1/starts, a batch of Starts
//	runner.go         runner and attempt: signal, stop on lease loss, watch an attempt, record its end
//	runner_start.go   runner.start: one Start, top to bottom, and the Spec it builds
//	runner_recover.go runner.recover: the attempts of an earlier stub on the DataDir
//	supervisors.go    the interface to the supervisors (supervisor.Client, supervisor.Simulator)
//	kits.go           exec and supervisor directories made ahead of Starts
//	cgroups.go        whether and where jobs get cgroups
//	sender.go         delivery of the outbox's events to the servers
//	servers.go        the servers the stub knows
//	lease.go          leaseKeeper: the lease, renewed with the servers
//	health.go         healthWatch: free space and inodes, attempt files; drains the machine
//	healthcheck.go    the site's health-check program
//	threshold.go      Threshold, --min-free-disk and --min-free-inodes
//	gossip.go         the stub's metadata and the servers it learns, on internal/gossip's node
//	rejoin.go         joining the pool again while no server is seen
//	reload.go         Reload: TLS material and gossip keyring on SIGHUP
//	facts.go          the machine's facts, the init file
//	metrics.go        the Prometheus metrics
//	simulate.go       Simulation, the claims of a simulated stub
package stub
