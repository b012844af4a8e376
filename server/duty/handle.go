package duty

import (
	"log/slog"

	"github.com/netmgr/netmgr/fsm"
)

// Handle is what a leader duty may do with its server. Every method may
// be called from several goroutines.
type Handle interface {
	// Apply commits one command through Raft on this server, which must
	// lead, and returns the state machine's result. A rule violation
	// comes back as Result.Err, not as the error.
	Apply(t fsm.MessageType, body any) (*fsm.Result, error)
	// Read calls fn with a consistent view of this server's copy of the
	// database; fn must not block or call back into the handle.
	Read(fn func(fsm.View))
	// Watch returns the applied index and a channel closed by the next
	// change of the database.
	Watch() (uint64, <-chan struct{})
	// Applies reports whether every server of the group applies
	// commands of type t, as the leader last recorded the group's
	// command level: a duty proposes a type numbered above 1.0's only
	// when it does.
	Applies(t fsm.MessageType) bool
	// Log is the server's logger.
	Log() *slog.Logger
}
