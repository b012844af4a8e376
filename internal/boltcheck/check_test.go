package boltcheck_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/netmgr/netmgr/internal/boltcheck"
)

// makeRaftDB writes n log entries of size bytes each, 64 to a write as
// Raft appends them, and a term and a vote, to a raft-boltdb store at
// path, opened as the server opens it.
func makeRaftDB(t testing.TB, path string, n, size int) {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        path,
		BoltOptions: &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType},
	})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer store.Close()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	for i := 1; i <= n; i += 64 {
		var batch []*raft.Log
		for j := i; j < i+64 && j <= n; j++ {
			batch = append(batch, &raft.Log{Index: uint64(j), Term: 1, Type: raft.LogCommand, Data: data})
		}
		if err := store.StoreLogs(batch); err != nil {
			t.Fatalf("store logs: %v", err)
		}
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatalf("set term: %v", err)
	}
}

// pageSize is bbolt's page size on the test machine.
var pageSize = os.Getpagesize()

// livePages returns the ids of the branch and leaf pages reachable from
// the file's root, for damaging one that matters.
func livePages(t *testing.T, path string) []int {
	t.Helper()
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	var ids []int
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if root := int(b.RootPage()); root != 0 {
				ids = append(ids, root)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return ids
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		want   error // nil: whole
	}{
		{"whole", func(*testing.T, string) {}, nil},
		{"missing", func(t *testing.T, path string) { must(t, os.Remove(path)) }, nil},
		{"empty", func(t *testing.T, path string) { must(t, os.Truncate(path, 0)) }, nil},
		{"garbage on a live page", func(t *testing.T, path string) {
			for _, id := range livePages(t, path) {
				writeAt(t, path, int64(id*pageSize), 0xab, pageSize)
			}
		}, boltcheck.ErrDamaged},
		{"garbage after a live page's header", func(t *testing.T, path string) {
			for _, id := range livePages(t, path) {
				writeAt(t, path, int64(id*pageSize+16), 0xff, 200)
			}
		}, boltcheck.ErrDamaged},
		{"truncated to half", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			must(t, err)
			must(t, os.Truncate(path, fi.Size()/2))
		}, boltcheck.ErrDamaged},
		{"truncated inside the meta pages", func(t *testing.T, path string) { must(t, os.Truncate(path, 5000)) }, boltcheck.ErrDamaged},
		{"meta pages zeroed", func(t *testing.T, path string) { writeAt(t, path, 0, 0, 2*pageSize) }, boltcheck.ErrDamaged},
		{"all garbage", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			must(t, err)
			writeAt(t, path, 0, 0x5a, int(fi.Size()))
		}, boltcheck.ErrDamaged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "raft.db")
			makeRaftDB(t, path, 2000, 300)
			tt.damage(t, path)
			err := boltcheck.Check(path)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Check = %v, want %v", err, tt.want)
			}
			if err != nil {
				t.Logf("Check: %v", err)
			}
		})
	}
}

func TestCheckInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	makeRaftDB(t, path, 10, 10)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	if err := boltcheck.Check(path); !errors.Is(err, boltcheck.ErrInUse) {
		t.Fatalf("Check = %v, want %v", err, boltcheck.ErrInUse)
	}
}

func TestProtect(t *testing.T) {
	tests := []struct {
		name string
		fn   func() error
		want string
	}{
		{"error", func() error { return errors.New("no") }, "no"},
		{"panic", func() error { panic("assertion failed") }, "assertion failed"},
		{"index out of range", func() error {
			var s []int
			i := len(s) + 2
			return fmt.Errorf("%d", s[i])
		}, "runtime error: index out of range [2] with length 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := boltcheck.Protect(tt.fn)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Protect = %v, want %q", err, tt.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeAt writes n bytes of b at off in path.
func writeAt(t *testing.T, path string, off int64, b byte, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	defer f.Close()
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = b
	}
	_, err = f.WriteAt(buf, off)
	must(t, err)
}
