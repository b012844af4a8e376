// Netmgr is the one binary of netmgr: the servers, the stubs and the user
// commands.
//
// Reached as netexec, netkill, netstatus, reserve or unreserve (links to
// the binary; argv[0] picks the command), it runs that command; otherwise
// `netmgr exec|kill|status|reserve|unreserve|suspend|resume|restart|
// events|server|stub|sim|agent|admin` reaches the same code, and `netmgr
// supervise` is the stub's supervisor (internal: the stub starts it).
// Every command has --help with an example. Every command but exec takes
// its options after its arguments too (netstatus keep --json; see
// flagsFirst); netexec leaves what follows BINARY to the job.
//
// Exit codes: 0 on success, 1 when the command failed (or, for
// `netexec --wait done`, when an instance did not exit 0), 2 when the
// command line was wrong. Errors go to stderr prefixed with the command's
// name.
//
// netmgr server and netmgr stub take every option from a TOML file too
// (--config, default /etc/netmgr/server.toml or stub.toml when it exists;
// config.go): each flag is wrapped in urfave/cli's altsrc counterpart, the
// keys are the flag names, and the command line wins. The default ports
// are 17646 (API), 17647 (Raft) and 17648 (gossip) for a server, 17656 and
// 17658 for a stub. packaging/ holds their systemd units, the sample
// files and the nfpm description `make deb` builds the Debian package from.
//
// The user commands find the servers from --addr or $NETMGR_ADDR (default
// http://127.0.0.1:17646) and keep retrying for --retry-for or
// $NETMGR_RETRY_FOR (default 15s) while no server answers or the group has
// no leader. This package is the only place urfave/cli is used; the
// renderers (render.go, render_sched.go, why.go) are pure functions with
// golden-file tests.
//
// The user commands start light: nothing is compiled or loaded at package
// initialisation (regexps are compiled at their first use), the link's
// --help is written without urfave/cli's template (help.go), its flags
// compute their names once (flagnames.go), and `make build` leaves
// urfave/cli's documentation generators out with the tag
// urfave_cli_no_docs, so that `netmgr man` works only in a build without
// it (`make man` runs one; man_nodocs.go).
//
// # A light command line
//
// The user commands are the servers' binary reached through links, so every
// netexec pays the start-up of every package in it. What is ours is kept
// out of start-up: no package-level regexp is compiled before its first use
// (sync.OnceValue), a link's --help is written without urfave/cli's text
// template (cmd/netmgr/help.go; a test holds it equal to the template's
// text), and `make build` leaves urfave/cli's documentation generators, and
// the Markdown parser under them, out of the binary (tag
// urfave_cli_no_docs; `make man` runs a build without it). urfave/cli v2
// computes a flag's names through a regexp on every call and asks every
// flag's names for each flag not given; the user commands' flags are
// wrapped so that they answer from a slice made once (lightFlags,
// cmd/netmgr/flagnames.go), which takes a submit from 9.3 M to 5.9 M
// instructions; the wrappers also write their help lines from those names.
// Help pages go out in one write(2) rather than one per tab-writer cell.
//
// Libraries with a heavy package initialisation are kept out of the binary
// where what we use of them is small. The servers' and stubs' /metrics are
// written by internal/promtext (counters, fixed-bucket histograms, labelled
// vectors, read-at-scrape gauges, the Go and process collectors, the text
// format), not prometheus/client_golang, whose default registry with its Go
// collector, and the protobuf runtime and procfs under it, were about a
// third of `netexec --help`; tests hold promtext's page byte for byte equal
// to client_golang's for the same metrics and its runtime families equal to
// client_golang's collectors'. The stub reads /proc with internal/procinfo
// (five small parsers), not procfs and its thirty init-time regexps.
// urfave/cli's altsrc stays for the server's and stub's TOML files (the
// configuration is the CLI library's own, issue 20), though it links
// yaml.v3: applying the file by hand saved 4% of `netexec --help` (3.85 M
// to 3.70 M instructions), too little to keep a second reading of every
// flag. The cost: about 800 lines of ours, and client_golang's text format
// to follow by hand should Prometheus change it (the comparison test would
// catch it). Neither prometheus nor protobuf is linked; what start-up is
// left is the Go runtime's (a 25 MB binary: module data checks and itabs
// grow with it) and the initialisation of raft's msgpack (net/rpc,
// encoding/gob, html/template), memberlist with miekg/dns and go-sockaddr,
// crypto and net/http. `netexec --help` runs 3.7 M instructions  against
// 2.9 M for `sbatch --version`; what keeps its CPU at about twice sbatch's
// is the kernel's side of starting a Go program (about 610 page faults
// against 160, the runtime's threads). The last step would be the user
// commands in a binary of their own, which departs from the one-binary
// design. doc/benchmark.md has the figures.
//
// How low a Go command can start is measured by scripts/cli-floor.sh:
// programs that print one line, each linking more of what netexec needs
// (the runtime alone; an HTTPS client; urfave/cli; netmgr's client and
// client/spec), beside `netexec --help`, under `perf stat`. On the 2-core
// VM at load 2.8 (50 runs each, perf's spread under 6%): 0.88, 1.33, 1.51
// and 1.93 ms of CPU, and 3.57 ms for `netexec --help`. So a second binary
// with the user commands would start at about 1.9 ms before any of their
// own code (of which memberlist, linked by client/pki's gossip keyring
// loader, is a part a second binary could shed), at the edge of the issue's
// 2 ms target. In the one binary the servers' and stubs' libraries cost the
// other 1.6 ms: their package initialisation, and the runtime's start-up
// work, which grows with the binary (its function and type tables).
//
// # Configuration files and packaging
//
// `netmgr server` and `netmgr stub` read every option from a TOML file as
// well as the command line (cmd/netmgr/config.go). Each flag is wrapped in
// its urfave/cli altsrc counterpart, so the file's keys are the flag names
// and take the flags' types and defaults; there is no second description of
// the options to keep in step. Before altsrc applies the file, the command
// parses it with BurntSushi/toml and refuses keys that name no flag, since
// altsrc ignores them. A flag set on the command line is never overwritten.
// `--config FILE` names the file; without it /etc/netmgr/ROLE.toml is read
// if it exists; --config= reads none (the test harness passes it). The dev
// agent has no file: it is throw-away by design.
//
// Default ports: server API 17646, Raft 17647, gossip 17648; stub API
// 17656, stub gossip 17658. Below Linux's ephemeral range (32768-60999) so
// no outgoing connection can hold them, and clear of the defaults of what
// shares hosts with a scheduler (Nomad, Consul, Vault, etcd, Slurm,
// HTCondor, PBS, SGE, Kubernetes, Prometheus exporters, Cassandra, Kafka,
// ZooKeeper, CU-SeeMe at 7648).
//
// packaging/ holds what a site would otherwise write by hand: the systemd
// units (systemd/; the stub's with KillMode=process so a stub restart
// leaves the supervisor and jobs alone, Delegate=yes since it makes a
// cgroup per job under its own, and RuntimeDirectoryPreserve=yes so the
// user socket's directory stays), maintainer scripts (deb/: systemctl
// daemon-reload; stop and disable on removal; nothing is enabled or started
// on install, nothing restarted on upgrade, data and keys kept on purge),
// the sample configurations (etc/, every key commented out, installed as
// conffiles) and the nfpm description (nfpm.yaml) `make deb` builds the
// Debian package from. nfpm is pinned in go.mod's tool directive and run
// with `go tool nfpm`.
//
// The package test (cmd/netmgr/deb_test.go) runs `make deb`, unpacks the
// package with `dpkg-deb -x` into an image FROM scratch (there is no
// registry; the binary is static), and starts a server and a stub in two
// containers on the host network from the units' ExecStart lines and a
// site's files, then runs a job through the API and one through netexec and
// the stub's socket. It needs make, git, dpkg-deb and a Docker engine and
// skips, saying which is missing, without them.
//
// # What netstatus shows of a job
//
// `netstatus -j` and `netstatus JOB` read what the API returns (`GET
// /v1/jobs`, `GET /v1/jobs/{ref}`): the job with its spec, dependencies and
// submit time, and each instance's current attempt with its times, exit,
// CPU, peak memory, error, reason and restart count. The filters (--name,
// --user, --state, --queue) are applied by the client, so they need no
// endpoint of their own and an older server serves them. `after N attempts`
// is the attempt number of a finished instance above 1: lease losses count,
// as they are attempts that ran. `GET /v1/jobs/{ref}` adds how each earlier
// attempt ended (fsm.Instance.History as client.Instance.History: machine,
// times, exit, signal, error, reason, CPU, peak memory); the list of jobs
// leaves it out to stay small. Once the job leaves the live state, its
// record is history's to keep: `netstatus ID` then falls back to `GET
// /v1/history?job=ID` (a prefix scan of history.db's attempts bucket, which
// is keyed by job first) and prints the attempts as `netmgr history --job
// ID` does, saying where they come from; with --json it stays an error that
// points there, so the detail view's JSON keeps one shape.
//
// # What users chose is data, also on a terminal
//
// Job names, arguments, binary paths, directories, reasons, file names a
// job kept and machine names are another user's text by the time someone
// else reads them, so the CLI prints each through printable
// (cmd/netmgr/safetext.go: C0, DEL, C1, invalid UTF-8, U+2028/9 and the
// bidi controls as Go escapes, other Unicode as it is), escaped before
// tabwriter measures a column, and its top-level error printer through
// printableLines (the same, but '\n' stays a line break: a database's
// errors come one a line; the servers quote names in their messages with
// %q). --json is left to encoding/json, which escapes control characters;
// `netmgr logs` copies the job's output unescaped, as cat would, since that
// is what was asked for; the dashboard (server/ui/static/app.js) sets text
// with textContent, never innerHTML, so markup in a name is shown, not
// parsed.
package main
