// Package slogadapt routes the logs of the libraries netmgr embeds into
// its one structured log (log/slog): hashicorp/raft's hclog.Logger (Raft)
// and the "[LEVEL] memberlist: ..." lines memberlist writes to a
// *log.Logger or io.Writer (Memberlist). Each line arrives once, at a
// level that means what it says: a first election is INFO, not WARN, and
// the noise of a clean shutdown is DEBUG, not ERROR.
//
// It imports nothing of netmgr and keeps no state beyond the loggers it
// wraps, so the server and the stub can share it. Every value it returns
// is safe for concurrent use, as slog.Logger is.
package slogadapt
