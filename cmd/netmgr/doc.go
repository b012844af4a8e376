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
package main
