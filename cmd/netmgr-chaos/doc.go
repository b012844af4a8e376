// Command netmgr-chaos is netmgr's chaos suite: it runs 5 servers and 6
// stubs in Docker containers on a private network, submits a steady stream
// of jobs (every tenth tick a dependency chain: A, then B afterok=A, then C
// after=B; and one cron job firing every 4 s, its schedule ended once the
// faults are healed), injects a seeded schedule of faults (killed and restarted
// leaders and servers, machine loss, stub restarts, paused containers,
// network partitions, and the whole control plane away: every server
// paused or killed, every stub cut off from the servers, one stub cut off
// from everything), heals everything, waits for the work to drain and
// then checks what happened against the rules netmgr promises:
//
//   - every acknowledged job is in the database;
//   - every instance of a restartable job finished (exited 0);
//   - no two attempts of one instance ran at the same time, no attempt ran
//     twice, and nothing started again after the instance had ended;
//   - a dependent job started only after its dependency's last ledger
//     record, ran when its dependency allowed it and ended
//     cancelled(dependency), never having started, when it did not;
//   - every time of the cron job's schedule, from its first to its last,
//     was decided exactly once, as a run or as a skip with its reason
//     (missed while no server led), and no firing stopped short of the
//     schedule's end;
//   - every server holds the same jobs at the same applied Raft index;
//   - no process is left in a stub container.
//
// The cluster is secure, as netmgr is by default: the suite makes a
// throw-away CA in the output directory with a certificate per server and
// per stub (naming its machine), a client certificate for the user chaos
// and a gossip keyring of one key, mounts the directory read-only at /tls
// in every container (the CA's key is removed first) and starts every
// server and stub with --ca-file, --cert-file, --key-file and
// --gossip-keyring. The suite's own requests (submits, reads, each
// server's ?stale copy) go over TLS with that client certificate, so
// every job runs as the user chaos, an ordinary user of the image: a job
// runs as root only when root submits it on a pool machine and the
// database allows root jobs, which is not what the suite is about.
// -insecure runs everything with --insecure instead (still as the user
// chaos, by the header), for comparison.
//
// What the jobs did comes from a ledger on a volume shared by the stubs:
// each job's shell script (docker/job.sh) appends start, beat and end
// records tagged with job, instance, attempt and machine.
//
// The suite also reports work lost: attempts of restartable jobs that were
// stopped (the ledger has their start and no end, and the servers started
// a later attempt) while a whole-control-plane fault was in force, or
// shortly after one with nothing else in force. Nobody could have run
// them elsewhere meanwhile, so stopping them was not needed; a stop
// during a fault of the attempt's own machine is the rule and does not
// count. -max-work-lost N makes more than N a violation (default: no
// limit, the figure is only reported). The suite ends with one line
// (wrapped here),
//
//	chaos: seed S, F faults, J jobs (C in dependency chains), N cron firings (R run, K skipped),
//	L lost, D doubled, X diverged, O out of dependency order, M cron firings missed or doubled, W work lost
//
// and exits 1 when any rule was broken (the details are printed above that
// line), 0 when none was, and 0 with "chaos: skipped: no Docker engine: ..."
// where no Docker engine answers.
//
// Every generated schedule opens with pause-all, cut-stubs, isolate-stub
// (of the stub running the most restartable attempts when it starts, with
// a minority server fault inside it) and kill-all, 8 s apart, so that even
// a 90 s run has each of them; then it draws from every kind.
//
// Usage:
//
//	netmgr-chaos -netmgr bin/chaos/netmgr [-busybox /bin/busybox]
//	    [-duration 3m] [-seed N | -schedule FILE] [-max-work-lost N] [-keep] [-insecure]
//
// The netmgr binary and busybox must be static: the image is built FROM
// scratch. `make chaos` builds both binaries, installs Debian's
// busybox-static where needed and runs this command. Traffic goes only to
// the containers on the network the suite creates (subnet -subnet) and to
// the servers' API ports published on 127.0.0.1.
//
// The files: main.go (flags), suite.go (the run from start to verdict),
// config.go (names and addresses), docker.go, compose.go and image.go (the
// Docker side), cluster.go (the running cluster), workload.go (the job
// stream), schedule.go (the fault schedule), faults.go and cut.go
// (injecting and healing; docker/cut.sh cuts traffic with blackhole
// routes), ledger.go, violation.go and check_*.go (the checker's pure
// logic, unit-tested; check_worklost.go charges stops to faults),
// collect.go (gathering what the checker reads), report.go (the verdict)
// and tls.go (the run's certificates).
package main
