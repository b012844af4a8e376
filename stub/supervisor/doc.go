// Package supervisor is the stub's supervisor: the process that forks an
// attempt's job, is its subreaper, reaps it, enforces its limits and
// writes its result, and outlives the stub that asked for it. It is the
// netmgr binary re-executed (/proc/self/exe) as `netmgr supervise`; the
// package's init turns any binary that links it (a test binary included)
// into the supervisor when NETMGR_SUPERVISOR_HOST or NETMGR_SUPERVISOR_DIR
// is set, so no main needs a hook of its own.
//
// What it exports, and nothing else:
//
//   - RunHost and RunAttempt: the two roles of `netmgr supervise`. The
//     host (--host ROOT) runs every attempt of one stub, ROOT being the
//     stub's attempts directory <DataDir>/attempts, on the socket
//     ROOT/host-2.sock (the number is the protocol's version). One process
//     for all attempts rather than one per attempt: a Go process's start
//     and exit cost about 15 ms of CPU, several times what the rest of an
//     attempt costs the machine. The supervisor of one attempt (--dir DIR)
//     is the fallback when no host can start: it reads DIR/spec.json and
//     serves DIR/sock.
//   - Client: the stub's connection to its host. Start starts the host if
//     none runs, holds a lifeline to it (the host pushes each job's result
//     on it, and exits once no stub holds one and no job runs), sends it
//     the Spec and returns once the job runs; Signal and Wait reach any
//     attempt's supervisor by the attempt's directory; Outcome and
//     KillLeftovers read what a supervisor left there.
//   - Simulator: the same methods, for a stub that simulates its jobs
//     (stub.Simulation): supervisors in the stub's process, no fork.
//   - Spec (what to run), Started, Result and Leftover (how it ended),
//     Adopted (what a directory's state tells a stub adopting it).
//   - The lease file (LeasePath, WriteLease, BootNow, DefaultLease), which
//     the stub writes and the supervisor of a restartable job reads, so a
//     lease that runs out stops the job even with no stub alive; and
//     DefaultLimitGrace and ExecFailedCode, which both sides use.
//
// Each attempt has a supervisor directory
// <DataDir>/attempts/<job>.<instance>.<attempt>, private to the stub (the
// exec dir belongs to the job's owner, who must not forge a result). The
// supervisor starts the job in its own process group, and its own cgroup
// v2 where the Spec names one (clone3 CLONE_INTO_CGROUP) and its cgroup v1
// directories where it names them (cgroupv1.go: forked from a thread that
// joined them and is then discarded), with the owner's
// credentials, writes state.json (its own and the job's pid, process start
// time and boot id, so that a pid the kernel recycled is never taken for
// them), enforces the limits (run limit: SIGTERM, then SIGKILL a grace
// later; memory: SIGKILL at once above the limit, sampled every 250 ms;
// each followed by SIGCONT so a stopped job receives it), kills whatever
// is left of the job when its first process ends (it is a child
// subreaper; without a cgroup, an orphan is the job's when its environment
// carries the job's NETMGR_JOB_ID, NETMGR_INSTANCE and NETMGR_ATTEMPT) and
// writes result.json durably.
//
// It is not the stub: it keeps no outbox, sends no event and knows no
// server. It decides nothing about an attempt but how to run it; whether
// an attempt starts, and what its end means, is the stub's.
//
// Files, in the order a start goes through them:
//
//	client.go           Client: Start (host, or a supervisor of one attempt), Signal, Wait, killLeftovers
//	lifeline.go         the stub's end of the lifeline: results pushed by the host
//	dial.go             askSupervisor, dialSupervisor: one request on an attempt's socket
//	reexec.go           init (the supervisor roles of any binary) and reexec (/proc/self/exe)
//	server.go           RunHost and server: the host's socket (start, lifeline, signal, wait)
//	host.go             host: the process that forks and reaps jobs, and its orphans; begin starts an attempt
//	attempt.go          RunAttempt and attempt: one job: startJob, wait, cleanup, survivors
//	attempt_control.go  an attempt's requests, signals, limits and lease guard
//	limits.go           limits and the Reasons they give
//	lease.go            the lease file: written by the stub, read by the lease guard
//	memory.go           a process group's resident memory
//	cgroup.go           jobCgroup: a job's cgroup v2 directory
//	cgroupv1.go         jobCgroupsV1: its cgroup v1 directories (cpu, cpuset, devices) on a hybrid host
//	devices_bpf.go      the eBPF device program that fences GPUs on a job's cgroup v2
//	identity.go         procIdentity: pid, start time and boot id
//	files.go            the directory's files: Spec, state, Result, Started, outcome, Adopt
//	simulate.go         Simulator
//	errors.go           the package's errors
//
// # Limits per job, and the warning
//
// A job's limits are its queue's, narrowed by its own: the leader puts the
// smaller of time= and nq_maxrun, and of memory= and nq_maxmem, in each
// Start (startRequest, server/dispatch), with the queue's kill_grace
// (10 s when unset) and the job's signal=SIG@LEAD when a time limit
// applies. The FSM refuses at submit what the queue cannot take
// (queue.CheckTime, beside CheckSubmit: a time over nq_maxrun, a warning
// with no time limit or a lead not shorter than it), with messages that
// name the queue's limit; the server adds a clear 409 while any server is
// below level 33. memory= is both the request a machine must fit and the
// limit, as Slurm's --mem is.
//
// The stub copies the limits into the attempt's supervisor.Spec, and the
// supervisor enforces them (stub/supervisor/limits.go, attempt_control.go):
// it outlives the stub, so a limit holds while the stub restarts or is
// upgraded. One goroutine per attempt sleeps to `start + run - lead`, sends
// the warning to the process group (without the SIGCONT a kill adds: a job
// suspended for its owner gets it when resumed), then sleeps to `start +
// run`, sends SIGTERM and SIGCONT, and SIGKILL a grace later. The reason
// recorded in the CHILD_TERM starts with the limit's name, timeout: or
// memory:, which netstatus shows as killed(timeout)/killed(memory); reasons
// of older stubs (`run limit of ...`) read the same. CONT, KILL and STOP
// are refused as warnings (CONT would resume a suspended job, the others
// cannot be trapped). The backfill planner judges a running job's end by
// its own limit and its queue's grace (server/planner/backfill.go).
package supervisor
