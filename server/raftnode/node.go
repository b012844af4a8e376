package raftnode

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/slogadapt"
)

// DefaultSnapshotInterval is Config.SnapshotInterval when it is zero
// (netmgr server's default --snapshot-interval). hashicorp/raft's 120 s
// let a busy server's log grow by up to four minutes of entries between
// snapshots (the check runs every 1-2 intervals), and a restart replays
// all of them before it serves: 32 s after 100,000 jobs in the retention
// benchmark. 10 s bounds that replay to 10-20 s of entries; a snapshot of
// a database under the default retention takes about 0.1 s, and none is
// taken while fewer than 8192 entries arrived.
const DefaultSnapshotInterval = 10 * time.Second

// Config says where and how Open starts Raft.
type Config struct {
	// Name is the server's name, its Raft ID.
	Name string
	// DataDir holds raft.db and the snapshots; Open creates it. Unused
	// with InmemStore.
	DataDir string
	// InmemStore keeps the Raft log and snapshots in memory (tests).
	InmemStore bool
	// Addr is the host:port Raft listens on, unless Transport is set.
	// Port 0 picks one, which is then the address advertised.
	Addr string
	// Transport, when set, replaces the listener on Addr (tests use
	// Raft's in-memory transport).
	Transport raft.Transport
	// TLS, when set, runs Raft over TLS (tls.go): only peers with a
	// server certificate of the cluster CA may speak Raft with it.
	TLS *pki.Material
	// Logger receives Raft's log lines.
	Logger *slog.Logger
	// SnapshotInterval is how often Raft checks whether to compact its
	// log; DefaultSnapshotInterval when zero.
	SnapshotInterval time.Duration
	// Tune, when set, may adjust the Raft configuration last (tests
	// shorten timeouts).
	Tune func(*raft.Config)
	// RelaxedPace, when not nil, reports whether this node, as leader, may
	// heartbeat at its own slower pace (pace.go); it is asked at each
	// change of leadership and at Node.RefreshPace. Nil: never.
	RelaxedPace func() bool
	// FSM is the state machine Raft applies the log to; Open restores it
	// from the newest snapshot in DataDir.
	FSM raft.FSM
	// Health records the outcome of every write to the Raft store; it
	// must not be nil.
	Health *Health
	// OnRefuse, when not nil, is called for every connection the TLS
	// transport refuses.
	OnRefuse func()
}

// Node is Raft with the stores and transport it owns. Open makes one;
// Close releases the stores and transport once Raft is shut down.
type Node struct {
	raft      *raft.Raft
	transport raft.Transport
	closers   []io.Closer
	notify    chan bool     // leadership changes, from raft.Config.NotifyCh via the pacer
	done      chan struct{} // closed by Close: the pacer stops
	pace      *pacer
	closeOnce sync.Once
	// overTLS is set when Raft runs on the TLS stream layer (tls.go):
	// peers' Raft addresses then prove who they are.
	overTLS bool
}

// Open starts Raft on the stores cfg names, recording the outcome of
// every write to them in cfg.Health. On a data dir it first checks
// raft.db and the snapshots (datadir.go) and restores cfg.FSM from the
// newest snapshot: a damaged file is an error that names it and Is
// ErrDamagedDataDir.
func Open(cfg Config) (*Node, error) {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.Name)
	// Half of hashicorp/raft's defaults: an election takes about 0.5-1.5 s,
	// well inside a stub's lease (LeaseDuration), and a leader's death
	// costs about a second of writes. The leader itself may take twice
	// the heartbeat timeout, so heartbeats every 100-200 ms (pace.go).
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	// A leader that has not heard from a quorum for this long steps down.
	// Not half the heartbeat timeout (hashicorp's ratio): 10,000 simulated
	// machines joining on 2 cores left their leader's followers silent for
	// 250-430 ms, and at 250 it abdicated for a hiccup, every machine's
	// lease lapsing in the election behind it. As long as the heartbeat
	// timeout (raft's limit), a cut-off leader still stops before a new
	// one can be elected; nothing else rests on it, as every lease grant
	// confirms leadership with a quorum first (server's leaderCheck).
	rc.LeaderLeaseTimeout = rc.HeartbeatTimeout
	// Not 50 ms: hashicorp/raft sends an empty append to every follower
	// each CommitTimeout with nothing to replicate, a third of an idle
	// leader's CPU. The leader tells the followers its commits itself
	// (server's commitNudge); this is the backstop for the entries it does
	// not nudge (configuration changes, Raft's own no-op).
	rc.CommitTimeout = time.Second
	rc.Logger = raftLogger(cfg.Logger)
	rc.SnapshotInterval = cfg.SnapshotInterval
	if rc.SnapshotInterval <= 0 {
		rc.SnapshotInterval = DefaultSnapshotInterval
	}
	notify := make(chan bool, 16)
	raw := make(chan bool, 16) // Raft's, passed on by the pacer
	rc.NotifyCh = raw
	if cfg.Tune != nil {
		cfg.Tune(rc)
	}
	n := &Node{notify: notify, done: make(chan struct{})}

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if cfg.InmemStore {
		store := &watchedStore{raftStore: raft.NewInmemStore(), health: cfg.Health}
		logs, stable, snaps = store, store, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		dir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		if err := checkDataDir(dir); err != nil {
			return nil, err
		}
		store, err := openRaftStore(dir)
		if err != nil {
			return nil, err
		}
		n.closers = append(n.closers, store)
		watched := &watchedStore{raftStore: store, health: cfg.Health}
		cache, err := raft.NewLogCache(512, watched)
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("create log cache: %w", err)
		}
		logs, stable = cache, watched
		fss, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, rc.Logger.Named("snapshot"))
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("open snapshot store: %w", err)
		}
		if err := restoreNewest(dir, cfg.FSM); err != nil {
			n.Close()
			return nil, err
		}
		rc.NoSnapshotRestoreOnStart = true // restoreNewest did
		snaps = fss
	}

	n.transport = cfg.Transport
	if n.transport == nil {
		addr, err := net.ResolveTCPAddr("tcp", cfg.Addr)
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("resolve raft address: %w", err)
		}
		var advertise net.Addr = addr
		if addr.Port == 0 {
			advertise = nil // advertise the port the listener picks
		}
		t, err := newNetworkTransport(&cfg, advertise, rc.Logger.Named("transport"))
		if err != nil {
			n.Close()
			return nil, err
		}
		n.transport = t
		n.overTLS = cfg.TLS != nil
		n.closers = append(n.closers, t)
	}

	r, err := raft.NewRaft(rc, cfg.FSM, logs, stable, snaps, n.transport)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.pace = &pacer{raft: r, heartbeat: rc.HeartbeatTimeout, election: rc.ElectionTimeout, relaxed: cfg.RelaxedPace}
	log := rc.Logger
	go n.pace.forward(raw, notify, n.done, func(err error) {
		log.Error("set the leader's heartbeat pace", "error", err)
	})
	return n, nil
}

// maxRPCsInFlight is 1: the leader replicates to each follower one
// AppendEntries at a time (a batch of entries each), not pipelined.
// hashicorp/raft v1.7.3's pipeline deadlocks when a follower answers
// Success=false (a log write that failed, as on a full disk): the decoder
// returns, the next send parks on the pipeline's full channel, and the
// replication goroutine never returns, so that follower gets no entry
// again (only heartbeats, so no election heals it) and Raft's Shutdown
// waits forever. TestFullLogDiskShowsUnhealthy hung so for 18 minutes in
// CI; grafana/pyroscope#5518 traces the same deadlock and turns
// pipelining off. hashicorp/raft's own note on MaxRPCsInFlight finds
// pipelining of little benefit but on high-latency networks.
const maxRPCsInFlight = 1

// newNetworkTransport listens for Raft on cfg.Addr: over TLS with the
// server's certificate when cfg.TLS is set (tls.go), calling cfg.OnRefuse
// (if not nil) for each connection refused; in plain TCP otherwise.
// advertise is the address peers reach; nil means the one bound.
func newNetworkTransport(cfg *Config, advertise net.Addr, hlog hclog.Logger) (*raft.NetworkTransport, error) {
	if cfg.TLS != nil {
		t, _, err := newTLSTransport(cfg.Addr, advertise, cfg.TLS, cfg.Logger.With("server", cfg.Name), hlog, cfg.OnRefuse)
		return t, err
	}
	t, err := raft.NewTCPTransportWithConfig(cfg.Addr, advertise, &raft.NetworkTransportConfig{
		MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog, MaxRPCsInFlight: maxRPCsInFlight,
	})
	if err != nil {
		return nil, fmt.Errorf("listen raft: %w", err)
	}
	return t, nil
}

// Raft is the node's Raft.
func (n *Node) Raft() *raft.Raft { return n.raft }

// Addr is the address peers reach this node's Raft at (or the in-memory
// transport's address).
func (n *Node) Addr() string { return string(n.transport.LocalAddr()) }

// LeaderCh delivers Raft's leadership changes: true when this node
// becomes leader, false when it stops. It is buffered; a reader that
// falls behind blocks Raft.
func (n *Node) LeaderCh() <-chan bool { return n.notify }

// RefreshPace asks Config.RelaxedPace again and, if this node leads,
// gives Raft the heartbeat pace that goes with the answer (pace.go).
func (n *Node) RefreshPace() error { return n.pace.refresh() }

// OverTLS reports whether Raft runs on the TLS stream layer, so that a
// peer's Raft address proves which server it is (VerifyServer).
func (n *Node) OverTLS() bool { return n.overTLS }

// Close closes the stores and the transport Open made, last opened
// first; Raft must be shut down first. Their errors are dropped: nothing
// is left to do about them.
func (n *Node) Close() {
	n.closeOnce.Do(func() { close(n.done) })
	for i := len(n.closers) - 1; i >= 0; i-- {
		_ = n.closers[i].Close()
	}
}

// raftLogger gives Raft an hclog logger that writes to the server's log,
// at levels that mean what they say (slogadapt.Raft).
func raftLogger(l *slog.Logger) hclog.Logger { return slogadapt.Raft(l) }
