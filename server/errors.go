package server

import (
	"errors"

	"github.com/netmgr/netmgr/server/raftnode"
)

// ErrDamagedDataDir means a file in the server's data dir is corrupt or
// truncated: raft.db, a snapshot, or history.db. The error that wraps it
// names the file and says how to recover. It is raftnode's, which finds
// the damage in Raft's files.
var ErrDamagedDataDir = raftnode.ErrDamagedDataDir

// The server's sentinel errors. Each is wrapped once, with the operation
// that failed, where it arises; handlers map them to HTTP statuses.
var (
	// errNotLeader means this server cannot apply because it does not lead.
	errNotLeader = errors.New("not the leader")
	// errNoLeader means the group has no leader right now; retry shortly.
	errNoLeader = errors.New("no leader: the server group is electing one, retry shortly")
	// errCatchingUp means a new leader has not yet applied every committed
	// entry, so it cannot answer a consistent read yet.
	errCatchingUp = errors.New("new leader is applying the log, retry shortly")

	// errConfig reports invalid configuration.
	errConfig = errors.New("invalid server configuration")

	// errPermission refuses a request by a user who may not make it: an
	// administrative change by a user who is not a declared admin_id, an
	// action on a job or reservation by one who neither owns it nor
	// administers the pool.
	errPermission = errors.New("permission denied")
	// errNoMachines means a reservation by requirements found too few
	// machines.
	errNoMachines = errors.New("not enough machines")

	// errNotAMember refuses to remove a name outside the Raft configuration.
	errNotAMember = errors.New("not a member of the raft configuration (netstatus -s lists the members)")
	// errRemoveLeader refuses to remove the leader itself: the group would
	// lose its leader in the middle of the change.
	errRemoveLeader = errors.New("it is the leader; transfer leadership first (stop it and let the others elect a new one)")
	// errRemoveAlive refuses to remove a server that gossip shows alive: the
	// leader would add it back on its next membership tick.
	errRemoveAlive = errors.New("it is alive in the gossip pool and would rejoin at once; stop it first")
)

// Errors of API tokens (tokens.go). A message never includes the token
// itself: it is a secret.
var (
	// errTokenMalformed means the string is not a token netmgr issued.
	errTokenMalformed = errors.New("malformed token: want the nmt_... string netmgr token create printed")
	// errTokenUnknown means no token with that hash is held: never
	// issued, revoked, or mistyped.
	errTokenUnknown = errors.New("unknown or revoked token")
	// errTokenExpired means the token's lifetime has passed.
	errTokenExpired = errors.New("expired token")
	// errUpgradeFirst refuses a command some server of the group would
	// not apply: its build predates the command's level.
	errUpgradeFirst = errors.New("not every server of the group runs a build that applies it; upgrade them all first")
	// errAmbiguousName means a job name matches more than one live job.
	errAmbiguousName = errors.New("ambiguous job name")
	// errAutomaticName refuses a symb_name of the form the server gives
	// jobs that have none (job<ID>), which could name another job.
	errAutomaticName = errors.New("names of the form job<NUMBER> are the server's automatic names")
	// errUnrunnable refuses, for a submit that asked not to queue it, a
	// job no machine of the pool meets the requirements of.
	errUnrunnable = errors.New("no machine can run this now")
	// errSitePolicy refuses a submit the site policy script's admit
	// refused; the script's message follows it.
	errSitePolicy = errors.New("refused by the site policy")
)

// Errors of the per-user limits (limits.go). The error that wraps each
// names the limit and the flag that raises it.
var (
	// errRateLimited refuses a request past the user's request rate.
	errRateLimited = errors.New("too many requests")
	// errTooManyStreams refuses a stream past the user's open streams.
	errTooManyStreams = errors.New("too many open streams")
	// errBlobQuota refuses files past the user's blob store quota.
	errBlobQuota = errors.New("over the blob store quota")
)
