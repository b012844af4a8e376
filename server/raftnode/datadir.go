package raftnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/boltcheck"
)

// The files Raft keeps in the data dir: the log and its stable state
// (term, vote) in one bbolt file, and raft.FileSnapshotStore's snapshots,
// each a directory holding meta.json and state.bin.
const (
	raftDBFile   = "raft.db"
	snapshotsDir = "snapshots"
	snapMetaFile = "meta.json"
	snapFile     = "state.bin"
)

// recoverAdvice is how to bring a server with a damaged data dir back:
// the group sends an empty server everything (a snapshot, then the log).
const recoverAdvice = "move the data dir aside (mv %[1]s %[1]s.damaged) and start this server again with an " +
	"empty one: it rejoins the group and installs a snapshot from the leader"

// damagedError is a damaged file in a server's data dir: it names the
// file, what is wrong and how to recover. dir is absolute.
type damagedError struct {
	dir string
	err error
}

func (e *damagedError) Error() string {
	return e.err.Error() + ": " + fmt.Sprintf(recoverAdvice, e.dir)
}
func (e *damagedError) Unwrap() error        { return e.err }
func (e *damagedError) Is(target error) bool { return target == ErrDamagedDataDir }

// checkDataDir checks, before Raft reads them, that the Raft files in dir
// are whole: every page of raft.db (boltcheck.Check), and of every
// snapshot that its meta.json decodes and its state.bin has the size
// meta.json records. A damaged file is an error naming it that Is
// ErrDamagedDataDir; nil when everything is whole or there is nothing
// yet. It reads raft.db's live pages; the snapshots' contents are checked
// as the newest is restored (restoreNewest).
func checkDataDir(dir string) error {
	db := filepath.Join(dir, raftDBFile)
	err := boltcheck.Check(db)
	switch {
	case errors.Is(err, boltcheck.ErrInUse):
		return fmt.Errorf("%s is in use by another process: is another server running with --data-dir %s?", db, dir)
	case err != nil:
		return &damagedError{dir: dir, err: err}
	}
	if err := checkSnapshots(filepath.Join(dir, snapshotsDir)); err != nil {
		return &damagedError{dir: dir, err: err}
	}
	return nil
}

// checkSnapshots checks each snapshot under dir: its meta.json decodes,
// and its state.bin has the size meta.json records. Raft itself skips a
// snapshot whose meta.json it cannot read: it would restore an older one,
// or none, and be left with a log that no longer starts where its state
// does.
func checkSnapshots(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read snapshots: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue // a snapshot being written, which Raft removes
		}
		if _, err := checkSnapshot(filepath.Join(dir, e.Name()), false); err != nil {
			return err
		}
	}
	return nil
}

// snapshotMeta is what checkSnapshot reads of a snapshot's meta.json, as
// raft.FileSnapshotStore writes it.
type snapshotMeta struct {
	raft.SnapshotMeta
	CRC []byte
}

// checkSnapshot checks the snapshot in dir: its meta.json decodes, and its
// state.bin has the size, and when sum is set the CRC-64, that meta.json
// records, as raft.FileSnapshotStore computes them.
func checkSnapshot(dir string, sum bool) (snapshotMeta, error) {
	metaPath, statePath := filepath.Join(dir, snapMetaFile), filepath.Join(dir, snapFile)
	var meta snapshotMeta
	b, err := os.ReadFile(metaPath)
	if err != nil {
		return meta, unreadable(metaPath, err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.CRC == nil {
		return meta, boltcheck.Damaged(metaPath, "corrupt", "it does not decode as a snapshot's meta.json")
	}
	f, err := os.Open(statePath)
	if err != nil {
		return meta, unreadable(statePath, err)
	}
	defer f.Close()
	var n int64
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	if sum {
		n, err = io.Copy(h, f)
	} else {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			n = fi.Size()
		}
	}
	if err != nil {
		return meta, unreadable(statePath, err)
	}
	switch {
	case n < meta.Size:
		return meta, boltcheck.Damaged(statePath, "truncated", fmt.Sprintf("%d bytes of the %d its %s records", n, meta.Size, snapMetaFile))
	case n != meta.Size:
		return meta, boltcheck.Damaged(statePath, "corrupt", fmt.Sprintf("%d bytes, its %s records %d", n, snapMetaFile, meta.Size))
	case sum && !bytes.Equal(h.Sum(nil), meta.CRC):
		return meta, boltcheck.Damaged(statePath, "corrupt", "its checksum is not the one its "+snapMetaFile+" records")
	}
	return meta, nil
}

// restoreNewest restores f from the newest snapshot in the data dir dir,
// in place of Raft (which is then started with NoSnapshotRestoreOnStart):
// Raft would fall back to an older snapshot when the newest fails its
// checksum or does not decode, and its log may no longer reach back to
// that one. A damaged snapshot is an error naming its file; the store it
// reads through logs nothing, so that error is the one line a server
// stopped by it prints. The snapshot is read twice, as Raft reads it:
// once for its checksum, once to restore.
func restoreNewest(dir string, f raft.FSM) error {
	store, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	snaps, err := store.List()
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	if len(snaps) == 0 {
		return nil
	}
	newest := snaps[0]
	_, src, err := store.Open(newest.ID)
	if err != nil {
		if _, cerr := checkSnapshot(filepath.Join(dir, snapshotsDir, newest.ID), true); cerr != nil {
			err = cerr // names the file and what is wrong
		}
		return &damagedError{dir: dir, err: err}
	}
	if err := f.Restore(src); err != nil {
		path := filepath.Join(dir, snapshotsDir, newest.ID, snapFile)
		if errors.Is(err, fsm.ErrSnapshotFormat) {
			return fmt.Errorf("snapshot %s: %w", path, err) // not damaged: says what to do
		}
		return &damagedError{dir: dir, err: boltcheck.Damaged(path, "corrupt", err.Error())}
	}
	return nil
}

// unreadable is a snapshot file that cannot be read: missing, or an I/O
// error.
func unreadable(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return boltcheck.Damaged(path, "unreadable", err.Error())
}

// openRaftStore opens raft.db in dir, which checkDataDir has found whole,
// and reads back every log entry: a page can be whole and an entry on it
// garbage. A panic from inside bbolt becomes an error naming the file.
func openRaftStore(dir string) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dir, raftDBFile)
	var store *raftboltdb.BoltStore
	err := boltcheck.Protect(func() error {
		var err error
		store, err = raftboltdb.New(raftboltdb.Options{
			Path: path,
			// No free-page list written with every commit (bbolt rebuilds
			// it from the pages at open, as etcd has it), and a hashmap
			// for it rather than an array.
			BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
		})
		return err
	})
	if err != nil {
		return nil, &damagedError{dir: dir, err: boltcheck.Damaged(path, "corrupt", "bbolt: "+err.Error())}
	}
	if err := boltcheck.Protect(func() error { return readAllLogs(store) }); err != nil {
		_ = store.Close()
		return nil, &damagedError{dir: dir, err: boltcheck.Damaged(path, "corrupt", err.Error())}
	}
	return store, nil
}

// readAllLogs decodes every entry of the log in store, as Raft will when it
// replays or sends them.
func readAllLogs(store raft.LogStore) error {
	first, err := store.FirstIndex()
	if err != nil {
		return fmt.Errorf("first index: %w", err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return fmt.Errorf("last index: %w", err)
	}
	if last == 0 {
		return nil
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		if err := store.GetLog(i, &l); err != nil {
			return fmt.Errorf("log entry %d: %w", i, err)
		}
	}
	return nil
}
