// Package tlsgate accepts TLS connections with a bounded number of
// handshakes under way at once.
//
// A server's http.Server handshakes each connection on the connection's
// own goroutine, so a thousand stubs that dial at once (after a leader's
// death or a pause of the whole group) make a thousand goroutines that
// want the CPU at once, and the few that keep the server in its Raft group
// (heartbeats, appends) wait behind them in the Go scheduler's run queue:
// on two cores, long enough for the followers to miss the leader and
// elect another, which every stub then dials again. A Listener does the
// handshakes itself, a bounded number at a time, and gives http.Server
// only connections whose handshake is done (a *tls.Conn, so the handshake
// http.Server asks for returns at once). Connections waiting their turn
// are parked goroutines, not runnable ones.
//
// A connection whose client gave up while it waited (its FIN already
// behind the ClientHello) is dropped before the handshake's key exchange
// and signature, the part that costs the CPU.
package tlsgate
