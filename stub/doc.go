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
// The job gets HOME, USER, LOGNAME and SHELL of the account it runs as
// (the owner's when the stub switches to it, else the stub's own; the
// shell from /etc/passwd, /bin/sh for accounts only NSS knows) unless its
// environment sets them, and starts in the request's Dir when it names one
// (supervisor.Spec.Chdir), its stdout and stderr staying in the exec dir.
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
// # Parts
//
// The stub is made of these parts; each package's own doc says more, and
// this package's files are named after the part they belong to:
//   - The API: Starts, Signal, facts, health, metrics and job output for
//     the servers (server certificates only, checked in one place), the
//     outage questions stubs ask each other, and the user socket, whose
//     relay vouches for the caller's uid (see DESIGN.md, Identity and
//     trust).
//   - The runner: one Start from the request to the fork, the exec and
//     supervisor directories made ahead of Starts, cgroups, watching an
//     attempt, recording its end, and recovering the attempts of an
//     earlier stub on the same DataDir.
//   - The supervisors (package stub/supervisor), reached through one
//     interface that the real host and the simulator both implement.
//   - The outbox (package stub/outbox) and the sender that delivers it.
//   - The lease keeper: renewals, the restart lease, and the outage
//     ride-out with its witness.
//   - Health: free space and inodes, the attempt files, the site's
//     health-check program, the thresholds they are judged by, and the
//     site's prologue and epilogue.
//   - Gossip: the memberlist node, the servers it learns, joining the pool
//     again, and the encryption keyring (moving to the shared gossip node,
//     internal/gossip).
//   - The owner policy (package stub/owner) and the settings it merges.
//   - The machine's facts and init file, the metrics, Reload on SIGHUP,
//     and Simulation, the claims of a simulated stub.
//
// # Exec dirs: unique, and removed
//
// An attempt runs in <ExecDir>/<cluster>/<job>.<instance>.<attempt>.
// <cluster> is pki.Material.ClusterID: the first 16 hex digits of the
// SHA-256 of the first certificate in the CA file, insecure without TLS. No
// other cluster id exists: the Raft configuration holds only server names,
// which a new cluster reuses; the fsm holds none, and adding one would mean
// a new command level and snapshot version for a value the stub alone
// needs. Every cluster makes its own CA (`netmgr tls ca create`, `agent
// --dev` a throw-away one), the stub already holds it, and it needs no
// change to the StartRequest or the servers. It changes when the CA is
// replaced: new attempts then go to a new directory, which is harmless,
// since what finds an attempt's directory later reads the attempt record,
// not the id.
//
// Uniqueness does not rest on the id alone: the directory is made with
// mkdir (a directory made ahead is renamed into place with
// renameat2(RENAME_NOREPLACE), since rename(2) silently replaces an empty
// directory) and its stdout and stderr with O_EXCL. A directory that exists
// (an insecure cluster beside another, a cluster made anew on the same CA
// whose job ids start again) fails the Start as the machine's fault
// (ChildEvent.MachineFault, so the instance goes back to the queue without
// counting an attempt, and the next attempt number gets a new name); it
// does not drain the machine, and the stub neither writes nor ever removes
// that directory. A Start the stub undoes (not durable, or the supervisor
// host failed; the server sends it again) removes the exec dir it made, so
// the repeat can make it again.
//
// Removal: the attempt record in the stub's outbox (attemptRecord) holds
// ExecDir (the directory this stub made; empty when it made none), EndedAt
// (the stub's clock when the end was recorded) and Removed. A sweeper
// (stub/execdirs.go) runs at start and every min(retention/4, 1 min): an
// ended attempt whose CHILD_TERM is no longer in the outbox (a server
// answered it: committed, or stale) and whose EndedAt is --exec-retention
// (default 24h) past has its directory removed, then Removed recorded.
// Because the records are durable, a restarted stub goes on where the last
// one stopped; a crash between the removal and its record only removes
// nothing again. Only directories named in this stub's records are removed:
// another cluster's sharing the exec dir, and attempts of stubs that
// predate the field, are left alone. Stub-local and clock-based on purpose:
// nothing here is in the fsm.
//
// Disk use: each sweep walks the exec dir and sums allocated blocks (du),
// published in /metrics (netmgr_stub_exec_dir_used_bytes,
// netmgr_stub_exec_dirs_kept) and gossiped in the stub's NodeMeta (xu) when
// it moved by a tenth and at least 1 MiB (so nothing is gossiped while it
// stays under 1 MiB; netstatus prints "-" then): gossip rather than the
// lease renewal because a new LeaseRequest field needs a "takes" flag from
// every server (older servers refuse unknown fields) while older members
// ignore an unknown gossip key; the threshold keeps metadata broadcasts
// rare. (Gossiping the first non-zero value at start would make every stub
// update its metadata right at join: the stub test of rejoining a restarted
// server failed 3 times in 3 so, the server's leave no longer reaching the
// stub before it shut down.) The servers copy it into
// client.Machine.ExecUsedBytes and `netstatus -m` prints it as EXECDIRS.
//
// The sweeper's condition "its end is recorded" also means "its copy_out is
// kept": the stub records an attempt's end only after its OutputsKept is
// committed (see package server/blobstore), and, after a checkpoint exit,
// its CheckpointKept (checkpoints.go).
//
// # Reading a job's output: netmgr logs
//
// `netmgr logs` reads an attempt's stdout or stderr where it is, in the
// exec dir, rather than copying output into the servers: nothing is written
// to Raft, and a running job's output is read as it grows. Two hops, each
// checked as the others are. The stub's `GET /v1/logs` (stub/http_logs.go,
// server certificates only, like Start and Signal) serves an attempt's file
// from an offset; with follow it looks for more every 50 ms and ends once
// the attempt is no longer running (asked before the last read, so the last
// writes are sent), or breaks the connection (http.ErrAbortHandler) when
// the stub's API shuts down (RegisterOnShutdown, so a followed stream does
// not hold it up), so that a reader never takes a cut stream for a whole
// one. 404 is an attempt it does not know; 410 is an exec dir removed after
// the retention (the record's Removed, or a missing file past EndedAt +
// retention, since the sweeper removes before it records). The server's
// `GET /v1/jobs/{ref}/logs` (server/http_logs.go) is a leader read, as `GET
// /v1/jobs/{ref}` is (a follower redirects; ?stale lets any server answer
// from its own view): a follower may not have applied a job just submitted,
// so `netmgr logs -f` asked of it right after the submit would find no such
// job. The leader checks the verified user as kill does (owner, admin_id,
// root on a pool machine), takes the instance's current attempt and machine
// from the fsm (or the last History entry once it was requeued), dials the
// stub with its TLS client expecting that machine's stub certificate, and
// copies the stream back, flushing each read; the request's context ends
// the stub request when the user goes. A followed instance that has not
// started waits on the fsm's watch channel as long as its caller does, and
// one placed but unknown to its stub yet (the Start in flight) is asked
// again every 100 ms for up to 30 s; the answer's headers go only once the
// stub has answered, so that every refusal is a status. The stub socket's
// relay streams too, and breaks, rather than ends, a stream the server
// broke. Followers of a running job cost one goroutine and one open file
// per reader on the stub (netmgr_stub_log_streams counts them), and a 50 ms
// poll (inotify would save the poll at the cost of a watch per reader and
// Linux-only code). Not done: following across a restart into the next
// attempt (a new `netmgr logs` does it), and resuming a broken stream from
// its offset (the stub takes one; the server does not use it yet).
//
// # Prologue and epilogue
//
// --prologue and --epilogue run in the stub, not the supervisor. The stub
// is the part that decides whether an attempt starts and that knows the
// machine's health: the prologue runs in runner.start after the exec dir is
// made and before the supervisor host forks the job, so a failure is a
// Start that fails as the machine's fault, the path the exec-dir work built
// (`recordExecFailure(..., fault=true)`): the CHILD_TERM carries
// MachineFault, the FSM queues the instance again at once with no restart
// counted (its attempt number moves on, its Restarts does not), and the
// health watch drains the machine (scriptFailed), which the next lease
// renewal reports as MachineHealth. The supervisor runs as the job's own
// user after setuid and knows nothing of health or of the servers; putting
// the scripts there would mean a second way to report a machine fault. The
// epilogue runs in the watcher goroutine after the attempt's end is
// recorded, so it never delays a CHILD_TERM; a failure drains the machine.
// An epilogue of an attempt that ended while no stub ran runs when the next
// stub records that end. Both run as the stub's user (root in a
// deployment), in /, with only PATH and the attempt's NETMGR_* identity in
// their environment, their output logged line by line, killed after
// --script-timeout. A Start waits for its prologue; the server's 5 s send
// timeout may repeat the Start meanwhile, which waits on the first
// (registerOf), so a prologue should be quick.
//
// The drain is sticky, as a Slurm node drained by its Prolog stays so until
// `scontrol update state=resume`: an admin fixes the cause and reloads the
// stub (SIGHUP, `systemctl reload`), which clears it (Stub.Reload). A drain
// that cleared by itself would bring the next job onto the same broken
// machine; disk and health-check problems, which the stub can look at
// again, still clear by themselves.
//
// # Renewing the lease
//
// A renewal round lasts at most 1 s (renewTimeout; in a pool of over
// 1,666 machines, renewing less often, up to 2 s with 1.5 s of leader
// patience: renewRound) and is hedged
// (client.WithHedge, stub/servers.go): it goes to the server that answered
// last, and after 150 ms without an answer to the next one as well, the
// first answer winning. A server cut off by a partition hangs rather than
// refuses, and costs only those 150 ms; the leader, slow while a whole pool
// joins at once (TLS handshakes, StubJoin commits), keeps the round to
// answer in. A per-try timeout cannot do both: at 150 ms a burst of joins
// left renewals failing, leases expiring and stubs asking their peers about
// an outage, which made the burst worse. The renewal and the CHILD reports
// share one TLS transport. With the leader it renews on a lease stream, a
// connection of its own upgraded from HTTP/1.1 (client.LeaseUpgrade), and
// keeps one waiting with each other server (client.WithWarmConnections,
// leaseWarmEvery; client's lease_standby.go), letting the shared
// connections close when idle (leaseIdleConn): when the leader dies, the
// renewals go on the survivors' streams, held there until the election
// ends, and on to the new leader's, without a handshake or a forwarded
// request (see package server, Handshakes when a pool starts at once).
//
// Which server first. A round starts on the leader when the stub knows it:
// from the last answer (client.LeaderHeader, which a follower copies back
// from the leader it forwarded to) or, before any answer, from gossip,
// where the leading server says so in its metadata (NodeMeta.Leader, set
// and cleared by monitorLeadership through gossip.setLeader,
// server/gossip.go; the stub passes a single claimed leader to its clients
// with client.Client.SetLeader, stub/servers.go, and ignores the hint while
// two servers claim to lead). A round that starts on the known leader waits
// half the round (leaseLeaderPatience, client.WithLeaderPatience) before it
// asks the next server, and the rest at 150 ms: a follower only forwards to
// the leader, so asking it while the leader is merely slow buys nothing
// and, over TLS, costs a handshake with each follower (see package server, Handshakes when a pool starts at once). A leader that refuses or fails moves the round on
// at once, and one that hangs behind a partition costs those 500 ms of the
// 1 s round; the third server still gets 350 ms. Learning another server
// from gossip keeps the preferred one (client.Client.SetAddrs) rather than
// starting over at the first.
//
// # Resources on the machine
//
// At start the stub finds its GPUs with `nvidia-smi --query-gpu=index,
// name,memory.total` when it is on PATH (resources.go; the type is the
// model's short name, "NVIDIA A100-SXM4-40GB" is a100) and reports them,
// the free disk under its exec dir and what it cannot enforce with its
// facts. Each attempt's Start carries what the committed placement gave
// it, and the supervisor enforces it so that it holds while no stub runs:
//
//   - CPUs: the attempt's cgroup gets cpu.max of CPUs × 100 ms per 100 ms
//     (stub/supervisor/resources.go); with --exclusive-cpus, a cpuset of
//     CPUs no other running exclusive attempt of this stub holds. The
//     stub enables the cpu (cpuset) controller in the cgroup v2 tree
//     where the parents offer it; where they do not and a cgroup v1
//     hierarchy has it (a hybrid host), the attempt gets a directory
//     there too (cgroupsv1.go: <mount><the stub's cgroup>/netmgr/<stub>/
//     <attempt>, only for what it asks) with cpu.cfs_quota_us = CPUs ×
//     cpu.cfs_period_us, or cpuset.cpus and the parent's cpuset.mems.
//     With neither, it says so (log and netstatus -m: "cpus: the cgroup
//     v2 tree offers no cpu controller nor ..."); --cpus is then counted
//     at placement only.
//   - GPUs: CUDA_VISIBLE_DEVICES and NETMGR_GPUS name exactly the given
//     indices (a value the job set is replaced), and on a machine with
//     GPUs a job given none gets both empty. Where a cgroup v1 devices
//     hierarchy is mounted, the attempt's devices cgroup denies every GPU
//     device (/dev/nvidiaN, char 195:N: minors 0-63 and any higher node
//     the host has) but its own, one rule each (v1 cannot allow one
//     device inside a wildcard deny; the eBPF program below denies
//     195:0-253 in a dozen instructions, the GPU minors being equal to
//     nvidia-smi's indices is assumed by both); nvidiactl,
//     nvidia-modeset and nvidia-uvm stay allowed. Without a v1 devices
//     hierarchy, the supervisor attaches to the attempt's cgroup v2 an
//     eBPF device program denying the same (stub/supervisor/
//     devices_bpf.go), where the kernel loads it (the stub tries once at
//     start); where neither can be had, device access is not fenced, and
//     the stub says so.
//   - Memory: the supervisor samples the job's resident memory (memory.stat
//     of its v2 cgroup with the memory controller, else the RSS of its
//     processes) and kills it past --memory, on any host.
//   - Disk: the supervisor measures the exec dir each second (lstat of
//     every entry, no link followed, no file opened, at most 2^20
//     entries) and SIGKILLs the attempt past its claim, reason "disk:
//     disk limit of N MB exceeded (exec dir M MB)", as memory is.
//
// Licences are the servers' alone: the stub never sees them.
package stub
