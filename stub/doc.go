// Package stub is the per-machine agent of netmgr: the paper's "stub"
// process that runs on every machine of the pool.
//
// A Stub serves a small HTTP/JSON API (wire types in package client):
//
//   - POST /v1/start starts one attempt of a job instance. It is idempotent
//     by (job id, instance, attempt): a repeat of an attempt this stub (or an
//     earlier stub on the same DataDir) already started answers 200 and
//     starts nothing.
//   - POST /v1/signal signals the whole job of an attempt (its process group
//     and cgroup) through its supervisor, with an optional grace period
//     after which the job gets SIGKILL.
//   - GET /v1/facts reports the machine: name, architecture (as uname -m
//     prints it), CPUs, memory, mounted file systems, load average.
//   - GET /v1/health answers 200 while the stub runs.
//   - GET /metrics serves the stub's metrics in the Prometheus text format
//     (event backlog and delivery, start latency, lease, gossip health).
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
// Supervisors: the stub's attempts run under its supervisor host, one
// process per stub: the stub's own binary re-executed (/proc/self/exe) as
// `netmgr supervise --host` in a session of its own, as slurmstepd or
// Nomad's executor do (the package's init turns any binary that links it,
// a test binary included, into the supervisor when NETMGR_SUPERVISOR_HOST
// or NETMGR_SUPERVISOR_DIR is set; see SuperviseHost and Supervise). One
// process for all attempts rather than one per attempt: a Go process's
// start and exit cost about 15 ms of CPU, several times what the rest of
// an attempt costs the machine. The stub makes the attempt's supervisor
// directory <DataDir>/attempts/<job>.<instance>.<attempt> (private to the
// stub: the exec dir belongs to the job's owner, who must not forge a
// result) and sends the host the attempt's spec on
// <DataDir>/attempts/host-2.sock (the number is the protocol's version);
// the host starts the job in its own process group (and its own cgroup,
// below) with the owner's credentials, writes state.json atomically (its
// own and the job's pid, process start time and boot id, the start time,
// whether the attempt is restartable, and the host's socket), and answers
// that the job runs; only then does the stub record the CHILD_REGISTER. The host waits for the job (one
// goroutine reaps every child on SIGCHLD), enforces its limits, kills
// whatever is left of the job when its first process ends (it is a child
// subreaper, so orphans that left the group come back to it; without a
// cgroup, an orphan is the job's when its environment carries the job's
// NETMGR_JOB_ID, NETMGR_INSTANCE and NETMGR_ATTEMPT) and writes
// result.json: exit code, signal, usage of the job's processes it reaped,
// the limit's reason, the leftover processes it killed. The stub holds a
// connection to the host, its lifeline, while it runs, and the host
// pushes each result on it once written; the stub signals the job through
// the host socket, naming the attempt's directory, and asks for a result
// there when no push can bring it (the lifeline broke, or the attempt was
// started by an earlier stub). The host exits once no stub holds a
// lifeline and no job runs.
// Should no host start, an attempt gets a supervisor process of its own
// (`netmgr supervise --dir`), which reads the spec from spec.json in the
// supervisor directory and serves the socket "sock" there instead.
//
// The supervisor does not depend on the stub: Shutdown leaves it and its
// job alone. A new stub on the same DataDir reattaches to every attempt
// not yet reported as ended: a result written meanwhile is recorded at
// once; a running supervisor is verified by pid, start time (field 22 of
// /proc/<pid>/stat) and boot id — never by a bare pid, which the kernel
// recycles — and watched again, so Signal works as before; a supervisor
// that is gone without a result (killed, or the machine rebooted) makes
// the attempt lost: a CHILD_TERM with Error "lost: supervisor gone" and
// exit code -1, after what is left of the job is killed (its cgroup, or
// its process group once its first process verifies).
//
// Cgroups: where the host offers a writable cgroup v2 tree (the cgroup2
// mount, /sys/fs/cgroup or /sys/fs/cgroup/unified, and the stub can
// create a cgroup under Config.CgroupParent or its own cgroup), each job
// is started straight into its own cgroup
// netmgr/<stub>/<job>.<instance>.<attempt> (clone3 CLONE_INTO_CGROUP);
// cleanup and SIGKILL use cgroup.kill, other signals reach every process
// in cgroup.procs, and memory is measured as anon + file_mapped from
// memory.stat where the memory controller is on (memory.current would
// count the page cache), else as the RSS of the cgroup's processes.
// Otherwise jobs run in process groups; the stub logs which at start.
//
// Limits: a StartRequest may carry its queue's limits, enforced by the
// attempt's supervisor, so they hold while no stub runs. With
// MaxRunSeconds the supervisor sends SIGTERM to the job that long after
// it started — wall time, so time the job spends stopped by netmgr
// suspend counts — and SIGKILL GraceMS later (10 s when 0) if it is still
// alive. With MaxMemMB it measures the job's resident memory every 250 ms
// and SIGKILLs the job above its limit at once; the largest sum seen is
// reported as MaxRSSKB when it exceeds what wait returned. Each of these
// signals is followed by SIGCONT so that a stopped job receives it. The
// attempt's CHILD_TERM then carries a Reason, whatever the exit status:
// "run limit of 3m20s exceeded" or "memory limit of 20 MB exceeded
// (resident 23 MB)"; the first limit to act names it.
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
// What the stub does not do yet: an owner policy (sleep on console
// activity).
package stub
