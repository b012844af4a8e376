// Command netmgr-bench measures netmgr on this machine and prints one
// table of figures, each with its median, spread and the target the
// performance issue holds it to. It runs suites, each starting what it
// needs and stopping it before the next:
//
//   - latency: 3 servers and 2 stubs as processes on 127.0.0.1 (Raft log
//     fsynced, as raft-boltdb does by default). Submit->registered for N
//     sequential single-instance /bin/true jobs (until WaitJob(started)
//     returns, i.e. the CHILD_REGISTER is committed); then C concurrent
//     submitters of 10-instance jobs on stubs given 256 slots each,
//     counted as instances registered per 1 s window (real forks); then
//     64 clients submitting without waiting, counted as submits accepted
//     per 1 s window.
//   - clisubmit: 3 servers and 1 stub as processes, the stub drained so
//     that jobs only queue; 8 shells at once each run `netexec /bin/true`
//     in a loop 50 times (15 under BENCH_QUICK), through the stub's
//     socket: submits per second over each round's wall time, 5 rounds
//     (3 under BENCH_QUICK), and the CPU of the shells and their netexec
//     processes per submit; then the same jobs as one `netexec --batch -`
//     per shell, and through the Go client from 8 goroutines (issue 20
//     point 11: at least sbatch's rate on the same machine). Where
//     Slurm's sbatch is installed and answers, the same shells loop
//     `sbatch --hold --wrap /bin/true` in each round for that comparison;
//     otherwise the suite prints why it has no sbatch figure.
//   - alloc: 3 servers and 12 stubs as processes; the whole `netexec
//     --unique -n N --wait started` process for N = 1, 2, 4, 8, 12 machines,
//     the sizes in turn, 11 rounds (5 under BENCH_QUICK, -alloc-rounds to
//     choose), each job waited for to end, untimed, before the next
//     (issue 24 point 5: each added machine at most 1 ms, 12 machines at
//     most 15 ms more than one), beside the Prospero Resource Manager's
//     1994 figures. Columns: /bin/true; /bin/sleep 1, whose instances
//     outlive the wait; --gang, reported as not measured by a netexec
//     without it. Where the time goes: the job's stamps (submitted, last
//     Start taken by a stub), the stage metrics and the CPU of every
//     process of the cluster per run.
//   - chain: 3 servers and 2 stubs as processes; a chain of 20 jobs,
//     each afterok the one before: the gap from one job's end to the
//     next one's start, as the stubs stamp them (target: median <= 50 ms).
//   - files: 3 servers and 2 stubs as processes; 15 jobs (5 under
//     BENCH_QUICK) with 10 MiB of copy_in each, a different input each
//     time: from before packing (pack, send to a server that answers
//     once a majority keep it, submit) to the instance's start as its
//     stub stamps it (target: median <= 1 s); alternating with the same
//     job without files, submit to start, the A/B baseline (issue 16).
//   - flood: 3 servers and 1 stub as processes; one user (a client
//     certificate) floods GET /v1/machines at the leader from 8 clients,
//     ignoring 429, while another runs `netexec --wait started /bin/true`
//     through the stub's socket: its wall time unloaded and, after 3 s of
//     flood, under it, 3 rounds of 20 jobs each (2 of 10 under
//     BENCH_QUICK; target: p50 under flood <= 2x unloaded), with the
//     flood's answers and the servers' and flooders' CPU (issue 34).
//   - owner: 1 server and 1 stub watching a fake input device
//     (--input-devices, --sleep-on-input 1s); the benchmark touches the
//     device and times until the running job's process is stopped (state
//     T), 20 times (5 under BENCH_QUICK; target: median <= 1 s).
//   - idle: 3 servers and 2 stubs as processes at rest, no job (issue
//     36 item 2): each process's CPU from /proc over 3 windows of 60 s
//     (20 s under BENCH_QUICK), 15 s after the machines are up, in ms of
//     CPU per s, for the leader, each follower and each stub (targets: 3
//     ms/s a server, 1 a stub). A window in which the leader changed is
//     measured again.
//   - simstubs: 3 servers and 100 simulated stubs (`netmgr sim`, no
//     fork): instances started per second.
//   - failover: 3 servers and 3 stubs; machine loss (stub, supervisor host
//     and job SIGKILLed together) to the restartable instance running
//     elsewhere, and leader SIGKILL to the next accepted submit, 5 rounds
//     each.
//   - outage: 3 servers and 2 stubs; every server SIGKILLed and kept down
//     until every stub holds every server dead, then restarted on its
//     data directory, the stubs left running: leader elected to the first
//     job running, 5 rounds.
//   - gossip: 3 servers and 200 simulated stubs over 4 processes with the
//     default memberlist settings: convergence (on 3 fresh pools, 1 under
//     BENCH_QUICK), time to notice a dead member, false suspicions,
//     server CPU. On a secure pool the stubs' certificates are issued
//     before the clock starts, as a real machine's exist before its stub.
//   - pass: one scheduling pass of the leader's planner placing 10,000
//     queued instances on 1,000 machines.
//   - policy: one pass over 100,000 waiting instances of 1,000 users
//     with fair share on, ordered by fair share and by a site policy
//     script's priority in turn, each by its thread's CPU time.
//   - scale: 10,000 machines and 1,000,000 job records built through the
//     fsm: snapshot size and time, restore time, and a real server's
//     restart to serving and its RSS. With -scale-pool (or -only scale),
//     for each pool size a 3-server TLS group and one `netmgr sim`: join
//     convergence, idle CPU and RSS, false suspicions over a steady
//     window, a killed machine noticed; then a restartable job of one
//     instance a machine and the leader SIGKILLed: the next submit
//     accepted, every machine up on the new leader, machines shown down
//     or unreachable, instances stopped, the pool back on lease streams;
//     then the same work with every server SIGSTOPped 8 s: instances
//     stopped (the pool must ride the outage out), machines shown down,
//     the next submit and every machine up after the resume;
//     then 10 instances a machine placed on machines of 4 slots, end to
//     end: starts a second until every free slot runs one, and the pass
//     of the full pool with the rest queued. The simulator runs at nice
//     10 while the pool joins, so that it does not starve the servers.
//   - retention: issue 19's curve. 2,000,000 jobs (100,000 under
//     BENCH_QUICK) submitted, placed, registered and ended through the
//     fsm on 1,000 machines, with the JobsExpire a leader with
//     --job-retention-count 10000 proposes after every 1,000, and some
//     300 jobs always in flight; every 100,000 (10,000): the jobs in the
//     database, the live heap and what a restored copy adds to it, the
//     snapshot's size, time and restore; at 500k, 1M and 2M (50k, 100k)
//     a real server restarted 3 times on the snapshot, to serving, and
//     its RSS. The same run without retention to 500,000 (50,000) for
//     the difference. Then one real server with --job-retention 2s and
//     10 simulated stubs runs 100,000 jobs (5,000) for 32 clients each
//     waiting for its job's end: its RSS, heap, live jobs, raft.db and
//     snapshots sampled 10 times, once settled, and a restart on its
//     data directory. The curves go to stderr.
//   - startcpu (only when -only names it; needs perf): the alloc suite's
//     cluster; per round 4 jobs of `netexec --unique -n 1 --wait started
//     /bin/true` and 4 of -n 12, each to its end, while one perf stat per
//     role (servers, stubs, supervisor hosts) counts task-clock, context
//     switches and page faults, switched on and off through perf's
//     control pipe around the jobs, the idle cluster's rate taken off;
//     (-n 12 less -n 1) / 11 per job is what one more machine costs each
//     role, 7 rounds. Counts, not wall time: what to compare builds by
//     on a shared machine (a VM without hardware counters has no
//     instruction counts to give).
//   - ui: the dashboard (issue 21 point 5) on 3 servers, 1,000 machines
//     (simulated stubs joined in waves of 125; the last 250 stay up, the
//     others are killed once joined: 1,000 live stubs are more than 2
//     cores run) and 10,000 jobs (one running on each live machine, the
//     rest held after one of those, in batches of 1,000). Headless
//     Chromium (servertest.FindBrowser; without one these figures say
//     why and the rest still run) signs in with a token on a follower
//     and times each view from the hash set until its rows are in the
//     DOM and a frame later, 7 rounds (3 under BENCH_QUICK), and the
//     jobs view's next page and filter. Then 100 HTTP clients, each its
//     own connection with the sign-in cookie, hold /ui/events open: an
//     event's time from the leader's stamp to all 100 streams (on the
//     follower and on the leader), the follower's CPU per event at 50
//     events/s with 100 streams open and with none, and its CPU while
//     the same 100 clients poll GET /v1/jobs?limit=50 once a second.
//
// Every cluster is secure, as netmgr runs by default: a throw-away CA per
// cluster, a certificate per server and stub (simulated stubs included),
// TLS on the API and Raft links, gossip encrypted with a keyring, and the
// benchmark's requests made over TLS as the stub certificate of a pool
// machine vouching for the user running the benchmark, so its jobs run
// as that user (its databases say allow_root_jobs, for root). -insecure runs every cluster with --insecure
// instead, the benchmark naming its user in the insecure mode's header.
// Issue 15 holds the secure figures to within 15% of the insecure ones
// of the same binary on the same machine: make bench-security runs both
// in ABBA order (scripts/bench-security.sh) and -compare prints, per
// figure, each mode's median and the ratio.
//
// Usage:
//
//	netmgr-bench [-netmgr bin/netmgr] [-only latency,failover,outage,startcpu] [-n 300] [-c 32] [-duration 10s] [-alloc-rounds 11] [-json] [-insecure]
//	netmgr-bench -compare pass-1.json,pass-2.json,...
//
// BENCH_QUICK=1 in the environment shortens every suite. Without -netmgr
// the binary is built into a temp dir.
package main
