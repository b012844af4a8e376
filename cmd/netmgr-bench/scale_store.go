package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// scaleTerm is the Raft term the fabricated snapshot was taken in.
const scaleTerm = 1

// dataDir is a server data directory holding the snapshots of one
// single-server group, laid out as `netmgr server --data-dir` keeps it:
// raft's file snapshot store under snapshots/ (the server creates its
// raft.db log and stable store beside it on start).
type dataDir struct {
	path   string
	store  *raft.FileSnapshotStore
	config raft.Configuration
	// trans encodes the configuration's peers into the snapshot's
	// metadata as the server's TCP transport would (both write the
	// address); it carries no traffic.
	trans raft.Transport
}

// newDataDir opens path as a data directory whose group is one voter,
// server name at raftAddr.
func newDataDir(path, name, raftAddr string) (*dataDir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// The server keeps two snapshots; so does this.
	store, err := raft.NewFileSnapshotStoreWithLogger(path, 2, hclog.NewNullLogger())
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(raftAddr))
	return &dataDir{path: path, store: store, trans: trans, config: raft.Configuration{Servers: []raft.Server{{
		Suffrage: raft.Voter, ID: raft.ServerID(name), Address: raft.ServerAddress(raftAddr),
	}}}}, nil
}

// snapshotTimes is what one snapshot measured.
type snapshotTimes struct {
	// locked is FSM.Snapshot, which holds the FSM's lock: Apply waits.
	locked time.Duration
	// total adds Persist into the file store (written and fsynced).
	total time.Duration
	bytes int64
}

// snapshot takes f's snapshot and persists it into the store as Raft
// would at f's applied index.
func (d *dataDir) snapshot(f *fsm.FSM) (snapshotTimes, error) {
	var st snapshotTimes
	index, _ := f.Watch()
	start := time.Now()
	snap, err := f.Snapshot()
	if err != nil {
		return st, fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Release()
	st.locked = time.Since(start)
	// The configuration entry is the group's first, as after a bootstrap.
	sink, err := d.store.Create(raft.SnapshotVersionMax, index, scaleTerm, d.config, 1, d.trans)
	if err != nil {
		return st, fmt.Errorf("create snapshot: %w", err)
	}
	if err := snap.Persist(sink); err != nil {
		return st, fmt.Errorf("persist snapshot: %w", err)
	}
	st.total = time.Since(start)
	st.bytes, err = d.size(sink.ID())
	return st, err
}

// size is the size of the state file of snapshot id.
func (d *dataDir) size(id string) (int64, error) {
	info, err := os.Stat(filepath.Join(d.path, "snapshots", id, "state.bin"))
	if err != nil {
		return 0, fmt.Errorf("snapshot size: %w", err)
	}
	return info.Size(), nil
}

// restore opens the newest snapshot and restores it into a new FSM as
// Raft does on start (Open checks the file's CRC, then Restore reads it),
// returning the FSM and how long both took.
func (d *dataDir) restore() (*fsm.FSM, time.Duration, error) {
	metas, err := d.store.List()
	if err != nil {
		return nil, 0, fmt.Errorf("list snapshots: %w", err)
	}
	if len(metas) == 0 {
		return nil, 0, fmt.Errorf("restore: no snapshot in %s", d.path)
	}
	runtime.GC() // the previous round's garbage is not this one's cost
	start := time.Now()
	_, rc, err := d.store.Open(metas[0].ID)
	if err != nil {
		return nil, 0, fmt.Errorf("open snapshot: %w", err)
	}
	f := fsm.New()
	if err := f.Restore(rc); err != nil {
		return nil, 0, err
	}
	return f, time.Since(start), nil
}

// liveHeapMiB is the heap in use after a full collection, in MiB.
func liveHeapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}
