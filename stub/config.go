package stub

import (
	"fmt"
	"github.com/netmgr/netmgr/stub/owner"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// DefaultExecDir is where attempt directories are made when Config.ExecDir
// is empty.
const DefaultExecDir = "/tmp/nmgr"

// DefaultVacateAfter is how long jobs suspended for the machine's owner
// wait for the machine to wake before they are vacated, as HTCondor's
// desktop policy preempts after 10 minutes suspended.
const DefaultVacateAfter = 10 * time.Minute

// Config configures a Stub.
type Config struct {
	// Name is the machine name, also the memberlist node name; the host
	// name when empty.
	Name string
	// DataDir holds the bbolt outbox (outbox.db). Required.
	DataDir string
	// HTTPAddr is the stub API listen address host:port (port 0 = pick);
	// 127.0.0.1:0 when empty.
	HTTPAddr string
	// GossipAddr is the memberlist bind address host:port (port 0 = pick).
	// Empty disables gossip: the stub then knows only Servers and the
	// hints of StartRequests.
	GossipAddr string
	// Join lists gossip addresses of servers (or other stubs) to join.
	Join []string
	// ExecDir is where attempt directories are made, in a directory of
	// the cluster's (execdirs.go); DefaultExecDir when empty.
	ExecDir string
	// ExecRetention is how long an ended attempt's exec dir (its stdout
	// and stderr) is kept once its end is committed;
	// DefaultExecRetention when zero.
	ExecRetention time.Duration
	// Servers are optional static server HTTP addresses, used in addition
	// to the servers learned from gossip (tests and bootstrap).
	Servers []string
	// InitFile, when set, is the machine's init file (`--init`): its
	// claimed mtype, attributes (mem, rating, nprocs, ...), keys and
	// mounts, in the database language's syntax. It is read at start; a
	// bad file stops the stub from starting.
	InitFile string
	// CgroupParent is the cgroup v2 directory under which each job gets a
	// cgroup of its own (netmgr/<stub>/<job>.<instance>.<attempt>, <stub>
	// naming the DataDir). Empty means the stub's own cgroup, where the
	// host offers a writable cgroup v2 tree; NoCgroups, or a tree the
	// stub cannot write, makes jobs run in process groups only.
	CgroupParent string
	// Logger receives the stub's and memberlist's logs; nil discards them.
	Logger *slog.Logger
	// TLS is the cluster CA and this machine's stub certificate: the
	// stub's API takes only callers with certificates of the CA (Start
	// and Signal only from servers), and its calls to the servers and
	// other stubs are TLS 1.3 with it. Nil runs insecure (--insecure).
	TLS *pki.Material
	// GossipKeyring is the file of gossip encryption keys (one base64 key
	// per line, the first the one used to send); empty sends gossip in
	// the clear.
	GossipKeyring string
	// Socket, when set, is the path of the Unix socket on which the
	// machine's users reach the servers through the stub: the stub reads
	// each caller's uid from the kernel and vouches for it.
	Socket string
	// Simulate, when set, makes the stub simulate its jobs instead of
	// forking them (see Simulation); CgroupParent is then NoCgroups.
	Simulate *Simulation

	// MinFreeDisk and MinFreeInodes are the least free space and inodes
	// the file systems of ExecDir and DataDir must keep: below either,
	// the stub drains its machine until they are back (health.go). The
	// zero values are DefaultMinFreeDisk and DefaultMinFreeInodes.
	MinFreeDisk   Threshold
	MinFreeInodes Threshold
	// HealthCheck, when set, is a program the stub runs every
	// HealthCheckEvery (DefaultHealthCheckEvery when zero), as Slurm runs
	// its HealthCheckProgram: one that exits non-zero or prints anything
	// drains the machine, its first line the reason, until a run passes.
	HealthCheck      string
	HealthCheckEvery time.Duration
	// Prologue and Epilogue, when set, are programs the stub runs as its
	// own user (root in a real deployment) before and after every attempt,
	// with the attempt's identity in their environment (scripts.go), each
	// killed after ScriptTimeout (DefaultScriptTimeout when zero). A
	// failing prologue drains the machine and sends the instance back to
	// the queue uncounted; a failing epilogue drains the machine. The
	// drain lasts until Reload or a restart.
	Prologue      string
	Epilogue      string
	ScriptTimeout time.Duration
	// Owner is the owner policy (package owner): when a detector is on,
	// the machine sleeps while its owner uses it, takes no new work then,
	// and its running jobs are suspended (ownerpolicy.go).
	Owner owner.Config
	// VacateAfter is how long jobs stay suspended for the owner before
	// they are vacated (DefaultVacateAfter when zero); KeepSuspended keeps
	// non-restartable ones suspended instead of killing them.
	VacateAfter   time.Duration
	KeepSuspended bool
	// DiskCheckEvery is how often the stub looks at its directories' free
	// space and inodes; 5 s when zero.
	DiskCheckEvery time.Duration
	// LeaseWarmEvery is how often the lease client keeps a stream or a
	// connection open with every server, for when one of them leads
	// (client.WithWarmConnections); 4 minutes when zero (servers.go says
	// why). Tests shorten it to see a warming round without waiting for
	// the first, which comes at a random point of its first 30 s.
	LeaseWarmEvery time.Duration
}

// withDefaults checks cfg and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, ErrNoDataDir
	}
	if c.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("default machine name: %w", err)
		}
		c.Name = h
	}
	if c.ExecDir == "" {
		c.ExecDir = DefaultExecDir
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:0"
	}
	// Supervisors run in directories of their own: paths they are given
	// must not depend on the stub's.
	for _, d := range []*string{&c.DataDir, &c.ExecDir} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return c, fmt.Errorf("stub directory: %w", err)
		}
		*d = abs
	}
	if c.LeaseWarmEvery < 0 {
		return c, fmt.Errorf("stub config: LeaseWarmEvery %v is negative", c.LeaseWarmEvery)
	}
	if c.Simulate != nil {
		c.CgroupParent = NoCgroups
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
