package server

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/slogadapt"
)

// raftNode bundles Raft and the stores it owns, so Shutdown can close them.
type raftNode struct {
	raft      *raft.Raft
	transport raft.Transport
	closers   []io.Closer
	notify    chan bool // leadership changes, from raft.Config.NotifyCh
	// overTLS is set when Raft runs on the TLS stream layer
	// (raft_tls.go): peers' Raft addresses then prove who they are.
	overTLS bool
}

// DefaultSnapshotInterval is netmgr server's default --snapshot-interval.
// hashicorp/raft's 120 s let a busy server's log grow by up to four
// minutes of entries between snapshots (the check runs every 1-2
// intervals), and a restart replays all of them before it serves: 32 s
// after 100,000 jobs in the retention benchmark. 10 s bounds that replay
// to 10-20 s of entries; a snapshot of a database under the default
// retention takes about 0.1 s, and none is taken while fewer than 8192
// entries arrived.
const DefaultSnapshotInterval = 10 * time.Second

// newRaft starts Raft on the stores cfg names, recording the outcome of
// every write to them in health. refused is called for every connection
// the TLS transport refuses.
func newRaft(cfg *Config, f *fsm.FSM, health *storeHealth, refused func()) (*raftNode, error) {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.Name)
	// Half of hashicorp/raft's defaults: an election takes about 0.5-1.5 s,
	// well inside a stub's lease (LeaseDuration), and a leader's death
	// costs about a second of writes. Heartbeats go every 50 ms.
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	rc.Logger = raftLogger(cfg.Logger)
	rc.SnapshotInterval = cfg.SnapshotInterval
	if rc.SnapshotInterval <= 0 {
		rc.SnapshotInterval = DefaultSnapshotInterval
	}
	notify := make(chan bool, 16)
	rc.NotifyCh = notify
	if cfg.TuneRaft != nil {
		cfg.TuneRaft(rc)
	}
	n := &raftNode{notify: notify}

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if cfg.InmemStore {
		store := &watchedStore{raftStore: raft.NewInmemStore(), health: health}
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
		watched := &watchedStore{raftStore: store, health: health}
		cache, err := raft.NewLogCache(512, watched)
		if err != nil {
			n.close()
			return nil, fmt.Errorf("create log cache: %w", err)
		}
		logs, stable = cache, watched
		fss, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, rc.Logger.Named("snapshot"))
		if err != nil {
			n.close()
			return nil, fmt.Errorf("open snapshot store: %w", err)
		}
		if err := restoreNewest(dir, f); err != nil {
			n.close()
			return nil, err
		}
		rc.NoSnapshotRestoreOnStart = true // restoreNewest did
		snaps = fss
	}

	n.transport = cfg.RaftTransport
	if n.transport == nil {
		addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
		if err != nil {
			n.close()
			return nil, fmt.Errorf("resolve raft address: %w", err)
		}
		var advertise net.Addr = addr
		if addr.Port == 0 {
			advertise = nil // advertise the port the listener picks
		}
		t, err := newNetworkTransport(cfg, advertise, rc.Logger.Named("transport"), refused)
		if err != nil {
			n.close()
			return nil, err
		}
		n.transport = t
		n.overTLS = cfg.TLS != nil
		n.closers = append(n.closers, t)
	}

	r, err := raft.NewRaft(rc, f, logs, stable, snaps, n.transport)
	if err != nil {
		n.close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	return n, nil
}

// newNetworkTransport listens for Raft on cfg.RaftAddr: over TLS with
// the server's certificate when cfg.TLS is set (raft_tls.go), calling
// refused (if not nil) for each connection refused; in plain TCP
// otherwise. advertise is the address peers reach; nil means the one
// bound.
func newNetworkTransport(cfg *Config, advertise net.Addr, hlog hclog.Logger, refused func()) (*raft.NetworkTransport, error) {
	if cfg.TLS != nil {
		t, _, err := newTLSTransport(cfg.RaftAddr, advertise, cfg.TLS, cfg.Logger.With("server", cfg.Name), hlog, refused)
		return t, err
	}
	t, err := raft.NewTCPTransportWithLogger(cfg.RaftAddr, advertise, 3, 10*time.Second, hlog)
	if err != nil {
		return nil, fmt.Errorf("listen raft: %w", err)
	}
	return t, nil
}

func (n *raftNode) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		_ = n.closers[i].Close()
	}
}

// raftLogger gives Raft an hclog logger that writes to the server's log,
// at levels that mean what they say (slogadapt.Raft).
func raftLogger(l *slog.Logger) hclog.Logger { return slogadapt.Raft(l) }
