package boltcheck_test

import (
	"path/filepath"
	"testing"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/netmgr/netmgr/internal/boltcheck"
)

// A server's raft.db holds at most Raft's TrailingLogs (10240) entries
// kept after a snapshot plus the SnapshotThreshold (8192) appended before
// the next one: about 18,000 entries. At 1 KiB an entry (a batch of
// submits or CHILD events) that is about 25 MB.
const (
	benchEntries   = 18432
	benchEntrySize = 1024
)

// BenchmarkCheck measures Check on a full-size raft.db, the cost it adds
// to a server's start.
func BenchmarkCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raft.db")
	makeRaftDB(b, path, benchEntries, benchEntrySize)
	b.ResetTimer()
	for b.Loop() {
		if err := boltcheck.Check(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures opening the same file as the server does, for
// comparison: bbolt walks the file at open to rebuild its free-page list.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raft.db")
	makeRaftDB(b, path, benchEntries, benchEntrySize)
	b.ResetTimer()
	for b.Loop() {
		store, err := raftboltdb.New(raftboltdb.Options{
			Path:        path,
			BoltOptions: &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType},
		})
		if err != nil {
			b.Fatal(err)
		}
		_ = store.Close()
	}
}
