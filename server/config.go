package server

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/buildinfo"
	"github.com/netmgr/netmgr/server/mailer"
	"github.com/netmgr/netmgr/server/raftnode"
)

// DefaultJobRetention is how long a finished job stays in the database
// by default (--job-retention).
const DefaultJobRetention = 24 * time.Hour

// DefaultJobRetentionCount is how many finished jobs the database keeps
// at most by default (--job-retention-count): enough that a pool finishing
// fewer than about 70 jobs a minute keeps its whole day (--job-retention),
// few enough that a large pool's finished jobs stay a bounded share of the
// live state whatever its rate of work. At about 1.9 KiB of heap and 260
// bytes of snapshot a job (doc/benchmark.md's retention suite), 100,000
// finished jobs are some 190 MiB of heap on every server, a 25 MiB
// snapshot and under a second of restore; beside a 10,000-machine pool's
// own work in flight (40,000 running, 100,000 queued), a restart stays
// within seconds and the leader within 1 GiB. Without it, 24 hours of a
// pool that large (4 slots a machine) running hour-long jobs is a million
// finished jobs: 1.9 GiB of heap, a 250 MiB snapshot, 7 s to restart.
const DefaultJobRetentionCount = 100_000

// DefaultSnapshotInterval is netmgr server's default --snapshot-interval,
// raftnode's (which says why it is 10 s).
const DefaultSnapshotInterval = raftnode.DefaultSnapshotInterval

// Config configures a Server.
type Config struct {
	// Name is the server's unique name; it is also its Raft server ID and
	// its gossip node name.
	Name string
	// DataDir holds the Raft log and stable store (raft.db, bbolt), the
	// snapshots and the history (history.db, bbolt). With InmemStore it
	// holds only the history; empty, the server keeps none (events then
	// come from the database's in-memory ring).
	DataDir string
	// HTTPAddr is the API listen address host:port; port 0 picks one.
	HTTPAddr string
	// RaftAddr is the Raft TCP transport address host:port.
	RaftAddr string
	// GossipAddr is the memberlist bind address host:port; port 0 picks one.
	GossipAddr string
	// BootstrapExpect forms a new group once this many servers (this one
	// included) are seen in gossip. Zero means never bootstrap: the server
	// waits to be added by an existing group's leader.
	BootstrapExpect int
	// Join lists gossip addresses of servers or stubs to join.
	Join []string
	// DatabaseFile, when set, is a database in the declaration language
	// that the group loads when it is first formed. It is parsed at start,
	// so a server with a bad file does not start. Later changes go through
	// `netmgr admin load`.
	DatabaseFile string
	// OutageGrace is how long past its lease a stub keeps restartable
	// work while more than half the pool's stubs say their leases ran out
	// too (the servers are down, paused or cut off from every machine),
	// and how much longer the leader then waits before it declares such a
	// lease expired. Zero means no grace: a stub stops restartable work
	// when its lease runs out, whatever the rest of the pool sees.
	OutageGrace time.Duration
	// LeaseRelayFrom is the pool size from which the leader spreads the
	// stubs' lease streams over the servers that do not lead, which pass
	// the renewals on to it in batches (lease_relay.go): its own sockets
	// then carry a few batches a second instead of every stub's renewal.
	// Zero never does; `netmgr server` defaults to DefaultLeaseRelayFrom.
	LeaseRelayFrom int
	// RestartGrace is how long the jobs of a machine whose stub stopped
	// to restart run on without it: the leader grants the stopping stub a
	// lease this long, shows the machine restarting meanwhile, and only
	// once it has run out unrenewed declares the lease expired (its
	// restartable work then runs elsewhere, the rest is lost). Zero grants
	// none: a stopping stub leaves the pool, as before command level 34.
	// At most MaxRestartGrace.
	RestartGrace time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Version is the build's version as `netmgr version` prints it, which
	// the server reports in GET /v1/servers; empty reports the version Go
	// recorded in the binary (buildinfo.Get).
	Version string
	// TLS is the server's CA and server certificate: its API, Raft and
	// its calls to stubs and peers are TLS 1.3 with them, and requests
	// act as the identity they prove. Nil runs insecure (--insecure):
	// plaintext, and a request is whoever its X-Netmgr-User header says.
	TLS *pki.Material
	// GossipKeyring is the file of gossip encryption keys (one base64 key
	// per line, the first the one used to send); empty sends gossip in
	// the clear.
	GossipKeyring string
	// Mail, when set, is how this server sends the group's mail (job
	// mail and the admins' failure mail) while it leads: an SMTP relay or
	// a sendmail program. Every server of a group should have the same;
	// a leader without it leaves the mail pending for one that has it.
	Mail *mailer.Config
	// MailRetry is the delay before the first retry of a failed send,
	// doubled for each further one up to 10 minutes; 5 s when zero.
	MailRetry time.Duration
	// JobRetention is how long a finished job stays in the database
	// after it ended; the leader then removes it (server/retention). Zero
	// keeps finished jobs forever (as far as JobRetentionCount allows).
	JobRetention time.Duration
	// JobRetentionCount, when positive, is how many finished jobs the
	// database keeps at most: the leader removes the ones that ended
	// earliest beyond it. Zero sets no limit; netmgr server's flag
	// defaults to DefaultJobRetentionCount.
	JobRetentionCount int
	// HistoryRetention is how long this server keeps the history of an
	// ended attempt or an event (history.go); it sweeps its own copy.
	// Zero keeps history forever.
	HistoryRetention time.Duration
	// SnapshotInterval is how often Raft checks whether at least 8192
	// entries arrived since its last snapshot and, if so, takes one and
	// compacts the log (server/raftnode); DefaultSnapshotInterval when zero. It
	// bounds what a restarted server replays before it serves.
	SnapshotInterval time.Duration
	// MaxCopySize is the limit on one job's copy_in files and on one
	// attempt's copy_out, in bytes; files.DefaultMaxSize (64 MiB) when
	// zero.
	MaxCopySize int64
	// UserRate and UserBurst are each user's token bucket for API
	// requests at the server that first receives them: UserRate a second,
	// up to UserBurst at once (ratelimit.go). Zero means the default
	// (DefaultUserRate, DefaultUserBurst); a negative UserRate means no
	// limit. Root on a pool machine and the database's admin_ids are
	// exempt.
	UserRate  float64
	UserBurst int
	// UserStreams is how many log, event and session streams one user may have
	// open at this server at once (stream_limit.go); DefaultUserStreams
	// when zero, no limit when negative.
	UserStreams int
	// UserBlobQuota is how many bytes of blobs one user's jobs may keep
	// in the blob store (quota_blobs.go): their copy_in archives and kept
	// outputs, and their uploads no job names yet; DefaultUserBlobQuota
	// when zero, no limit when negative.
	UserBlobQuota int64

	// RaftTransport, when set, replaces the TCP transport (tests use raft's
	// in-memory transport); RaftAddr is then ignored.
	RaftTransport raft.Transport
	// InmemStore keeps the Raft log and snapshots in memory (tests).
	InmemStore bool
	// TuneRaft, when set, may adjust the Raft configuration (tests shorten
	// timeouts).
	TuneRaft func(*raft.Config)
	// ApplyTimeout bounds one Raft apply; 10 s when zero.
	ApplyTimeout time.Duration
}

// validate checks c and fills in its defaults.
func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: --name is required", errConfig)
	case c.DataDir == "" && !c.InmemStore:
		return fmt.Errorf("%w: --data-dir is required", errConfig)
	case c.HTTPAddr == "":
		return fmt.Errorf("%w: --http is required", errConfig)
	case c.RaftAddr == "" && c.RaftTransport == nil:
		return fmt.Errorf("%w: --raft is required", errConfig)
	case c.GossipAddr == "":
		return fmt.Errorf("%w: --gossip is required", errConfig)
	case c.OutageGrace < 0 || c.OutageGrace > MaxOutageGrace:
		return fmt.Errorf("%w: --outage-grace must be between 0 and %v", errConfig, MaxOutageGrace)
	case c.RestartGrace < 0 || c.RestartGrace > MaxRestartGrace:
		return fmt.Errorf("%w: --restart-grace must be between 0 and %v", errConfig, MaxRestartGrace)
	case c.LeaseRelayFrom < 0:
		return fmt.Errorf("%w: --lease-relay-from must not be negative", errConfig)
	case c.JobRetention < 0:
		return fmt.Errorf("%w: --job-retention must not be negative", errConfig)
	case c.JobRetentionCount < 0:
		return fmt.Errorf("%w: --job-retention-count must not be negative", errConfig)
	case c.MaxCopySize < 0:
		return fmt.Errorf("%w: --max-copy-size must not be negative", errConfig)
	case c.UserBurst < 0:
		return fmt.Errorf("%w: --user-burst must not be negative", errConfig)
	case c.HistoryRetention < 0:
		return fmt.Errorf("%w: --history-retention must not be negative", errConfig)
	case c.BootstrapExpect < 0:
		return fmt.Errorf("%w: --bootstrap-expect must not be negative", errConfig)
	}
	for _, a := range []string{c.HTTPAddr, c.GossipAddr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: address %q: %v", errConfig, a, err)
		}
	}
	if c.Version == "" {
		c.Version = buildinfo.Get("", "").Short()
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
