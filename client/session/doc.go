// Package session carries interactive jobs' sessions: netexec --pty and
// -i, netmgr attach and netmgr shell. It owns the protocol both ends
// speak (Link, Frame) and the job's interactive mode (Mode, EnvVar); the
// stub's end (stub/sessions.go) and the user's (cmd/netmgr/interactive.go)
// use it. It imports nothing of ours.
//
// # The path
//
// A session's bytes go client -> any server -> the stub that runs the job,
// over the connections every other request uses: the client's (TLS with
// its certificate or token, or the stub's user socket, whose relay vouches
// for the caller), then the server's to the stub (TLS, the stub's
// certificate checked against the machine's name). Each hop is an HTTP
// upgrade (client.SessionUpgrade: GET /v1/jobs/{ref}/session on a server,
// GET /v1/session or /v1/shell on the stub), after which the server copies
// bytes both ways without reading them. The server checks the caller as
// every job action does (owner or admin, 403 with the reason otherwise)
// against its own view, so any server relays, not only the leader: a
// session needs no quorum. A direct client-to-stub path would save a hop
// but need a route and a certificate check from every user to every
// machine; Slurm's srun goes to slurmd for the same survival, at that
// price. Nomad's alloc exec goes through one server and dies with it.
//
// # Surviving the server between
//
// The stub holds the session: the job's pseudo-terminal master (or its
// FIFOs) and its end of the Link. Each end of a Link keeps an ordered log
// of the frames it sends (stdin, its end, window sizes and signals from
// the client; stdout, stderr and last the exit from the stub) as bytes
// with offsets, and counts the bytes of the peer's log it received and
// took. On the wire, data messages carry their offset and acknowledgements
// carry what the application took; the sender drops what was
// acknowledged and sends at most a Window beyond it, so the receiver's
// queue is bounded and its reading never blocks (acknowledgements keep
// flowing, so `cat` with both directions full cannot deadlock). When a
// connection breaks (the relaying server died), the client dials again
// through the next server; both ends say in a hello where they stand,
// each sends the other's missing suffix, and a receiver drops what it
// has already, so no byte is lost, repeated or reordered. Resize frames
// ride the same log, so a window change made while the path was down
// arrives in order. The test of it SIGKILLs the relaying server with
// 6 MB flowing each way and compares every byte.
//
// # Detach, attach, hang-up
//
// The stub (the acceptor) hears the client's hello before it answers. A
// client that never greeted (netmgr attach, or netexec's first connection)
// says so and takes the session as the stub has it: its log goes on from
// what the stub received, and it reads the stub's log from the first byte
// still unacknowledged, the stub dropping a frame its previous client
// left half-sent. While no client is attached the detach grace runs
// (netexec --detach-grace, default 60s, carried in Mode): when it passes,
// the job gets SIGHUP, as a terminal's hang-up sends it; 0 hangs up at
// once. A job that ends keeps its last output and exit in the log until a
// client takes them (at most 10 minutes).
//
// # The job's side
//
// Mode rides in the job's environment as NETMGR_INTERACTIVE, which the
// log, the snapshots and every Start carry already: an interactive job
// needs no command level, no snapshot version, and no change to dispatch;
// the stub takes the variable out of what the job sees. The stub opens the
// pseudo-terminal (github.com/creack/pty), gives its slave to the job's
// user (mode 0620, as login does) and hands the supervisor its path; the
// supervisor starts the job in a session of its own with the terminal as
// its controlling one, so Ctrl-C, Ctrl-Z and Ctrl-\ act through the line
// discipline as on any terminal. Without a terminal (-i) it is three FIFOs
// in the attempt's supervisor directory, which the stub holds open first
// so no open waits; the end of the client's input closes the job's stdin.
// netmgr shell has the supervisor fork the command inside the running job
// (its user, never root for a user's job; its environment, directory and
// cgroup), reaped by the same reaper and killed with the job; its session
// is named by an id the client chose, so a reconnection finds it again.
//
// # Limits
//
// The session lives in the stub's memory: a stub restart ends it (the job
// sees its terminal hang up; pipes see EOF). An old supervisor host that
// ignores Spec.Stdio is detected (Started.Stdio) and the session
// refused. Sessions are logged by the stub and the relaying servers,
// and the relaying server records in netmgr events who opened, took back
// (netmgr attach) and closed each one (fsm.SessionEvent, command level
// 41; server/session_events.go): the client's first connection says
// which of the first two it is, and a relay whose connection ended asks
// the stub for a few seconds whether the session has closed; the stub
// tells only the first relay to ask, so a close is recorded once. A
// session that ends with its stub, or at the hang-up after its grace, is
// not recorded closed (its instance's end is).
package session
