package raftnode

import "errors"

// The package's sentinel errors.
var (
	// ErrDamagedDataDir means a file in the server's data dir is corrupt
	// or truncated: raft.db, or a snapshot. The error that wraps it names
	// the file and says how to recover: move the data dir aside and start
	// the server with an empty one, which the group then sends a snapshot.
	ErrDamagedDataDir = errors.New("damaged data dir")

	// errNotAdvertisable means the Raft listener is bound to an
	// unspecified address (0.0.0.0) and no other address was given for
	// peers to reach.
	errNotAdvertisable = errors.New("raft address is not advertisable: bind a specific address")
)
