package raftnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/netmgr/netmgr/internal/testwait"
	"hash/crc64"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// testConfig is a node on the data dir dir, on Raft's in-memory
// transport, with short timeouts.
func testConfig(dir string, f raft.FSM, h *Health) Config {
	_, addr := raft.NewInmemTransport("")
	return Config{
		Name:      "s0",
		DataDir:   dir,
		Transport: addr,
		Logger:    slog.New(slog.DiscardHandler),
		FSM:       f,
		Health:    h,
		Tune: func(c *raft.Config) {
			c.HeartbeatTimeout = 50 * time.Millisecond
			c.ElectionTimeout = 50 * time.Millisecond
			c.LeaderLeaseTimeout = 50 * time.Millisecond
			c.CommitTimeout = 5 * time.Millisecond
		},
	}
}

// leaderElected is a log entry the real FSM applies.
func leaderElected(t *testing.T, term uint64) []byte {
	t.Helper()
	b, err := fsm.Encode(fsm.LeaderElectedType|fsm.IgnoreUnknownFlag, fsm.LeaderElected{At: time.Unix(1, 0).UTC(), Name: "s0", Term: term})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writtenDataDir runs a one-node group on a fresh data dir, on the real
// stores (raft-boltdb, file snapshots), applies a few entries, takes a
// snapshot, applies a few more, stops, and returns the data dir and the
// snapshot's name.
func writtenDataDir(t *testing.T) (dir, snap string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "data")
	var h Health
	cfg := testConfig(dir, fsm.New(), &h)
	n, err := Open(cfg)
	if err != nil {
		t.Fatalf("open on an empty data dir: %v", err)
	}
	r := n.Raft()
	boot := raft.Configuration{Servers: []raft.Server{{ID: "s0", Address: raft.ServerAddress(n.Addr())}}}
	if err := r.BootstrapCluster(boot).Error(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the node to lead", func() bool { return r.State() == raft.Leader })
	for i := range 6 {
		if err := r.Apply(leaderElected(t, uint64(i+1)), 5*time.Second).Error(); err != nil {
			t.Fatalf("apply: %v", err)
		}
		if i == 2 {
			if err := r.Snapshot().Error(); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		}
	}
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	n.Close()
	if kind, text := h.Problem(time.Now()); kind != "" {
		t.Fatalf("writing the data dir: store problem %s %q", kind, text)
	}
	snaps, err := os.ReadDir(filepath.Join(dir, snapshotsDir))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots in the data dir: %v %v, want one", snaps, err)
	}
	return dir, snaps[0].Name()
}

// TestOpenRefusesDamagedFiles damages each of Raft's files in a data dir
// a real node wrote and opens it again: Open fails with an error that Is
// ErrDamagedDataDir, names the damaged file and what is wrong with it,
// and says how to recover. The same data dir undamaged opens.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	pristine, snap := writtenDataDir(t)
	state := filepath.Join(snapshotsDir, snap, snapFile)
	meta := filepath.Join(snapshotsDir, snap, snapMetaFile)
	tests := []struct {
		name   string
		file   string // relative to the data dir; "" for none
		damage func(t *testing.T, path string)
		want   string // the file's state in the error; "" when it opens
	}{
		{"whole", "", nil, ""},
		{"raft.db garbage", raftDBFile, garbagePages, "raft.db is corrupt"},
		{"raft.db truncated", raftDBFile, truncateHalf, "raft.db is truncated"},
		{"raft.db meta pages zeroed", raftDBFile, zeroMeta, "raft.db is corrupt"},
		{"snapshot garbage", state, garbageMiddle, "state.bin is corrupt"},
		{"snapshot truncated", state, truncateHalf, "state.bin is truncated"},
		{"snapshot longer than recorded", state, appendByte, "state.bin is corrupt"},
		{"snapshot missing", state, remove, "state.bin is unreadable"},
		{"snapshot undecodable", state, undecodableSnapshot, "state.bin is corrupt"},
		{"snapshot meta garbage", meta, garbageMiddle, "meta.json is corrupt"},
		{"snapshot meta missing", meta, remove, "meta.json is unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			copyTree(t, pristine, dir)
			path := filepath.Join(dir, tt.file)
			if tt.damage != nil {
				tt.damage(t, path)
			}
			f := fsm.New()
			n, err := Open(testConfig(dir, f, new(Health)))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("open the undamaged data dir: %v", err)
				}
				var restored uint64
				f.Read(func(v fsm.View) { restored = v.Index() })
				_ = n.Raft().Shutdown().Error()
				n.Close()
				if restored == 0 {
					t.Errorf("the FSM was not restored from the snapshot")
				}
				return
			}
			if err == nil {
				_ = n.Raft().Shutdown().Error()
				n.Close()
				t.Fatalf("opened a data dir with %s damaged", tt.file)
			}
			if !errors.Is(err, ErrDamagedDataDir) {
				t.Errorf("got %v, want an error that Is ErrDamagedDataDir", err)
			}
			t.Logf("%v", err)
			for _, want := range []string{path, tt.want, "move the data dir aside (mv " + dir + " " + dir + ".damaged)"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestCheckDataDirSkipsSnapshotsBeingWritten: a snapshot directory still
// being written (".tmp") is Raft's to remove, not damage; an empty data
// dir is whole.
func TestCheckDataDirSkipsSnapshotsBeingWritten(t *testing.T) {
	dir := t.TempDir()
	if err := checkDataDir(dir); err != nil {
		t.Fatalf("empty data dir: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, snapshotsDir, "1-2-3.tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkDataDir(dir); err != nil {
		t.Fatalf("data dir with a snapshot being written: %v", err)
	}
}

// undecodableSnapshot replaces a snapshot's state.bin with bytes the FSM
// cannot restore, and records their size and checksum in its meta.json,
// as if the snapshot had been written so: only the FSM finds the damage.
func undecodableSnapshot(t *testing.T, path string) {
	garbage := bytes.Repeat([]byte("not a snapshot "), 100)
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	metaPath := filepath.Join(filepath.Dir(path), snapMetaFile)
	b, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	h.Write(garbage)
	m["Size"], m["CRC"] = len(garbage), h.Sum(nil)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metaPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files and directories under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// garbagePages writes garbage over every page of a bbolt file but the two
// meta pages.
func garbagePages(t *testing.T, path string) {
	page := int64(os.Getpagesize())
	overwrite(t, path, 2*page, int(size(t, path)-2*page))
}

// garbageMiddle writes garbage over the middle third of a file.
func garbageMiddle(t *testing.T, path string) {
	n := size(t, path)
	overwrite(t, path, n/3, int(max(n/3, 1)))
}

// zeroMeta zeroes both meta pages of a bbolt file.
func zeroMeta(t *testing.T, path string) {
	overwriteWith(t, path, 0, make([]byte, 2*os.Getpagesize()))
}

// truncateHalf cuts a file to half its size.
func truncateHalf(t *testing.T, path string) {
	if err := os.Truncate(path, size(t, path)/2); err != nil {
		t.Fatal(err)
	}
}

// appendByte makes a file one byte longer.
func appendByte(t *testing.T, path string) { overwriteWith(t, path, size(t, path), []byte{0}) }

// remove removes a file.
func remove(t *testing.T, path string) {
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func size(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// overwrite writes n bytes of a repeating pattern at off in path.
func overwrite(t *testing.T, path string, off int64, n int) {
	overwriteWith(t, path, off, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x5a}, n/5+1)[:n])
}

func overwriteWith(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesDataDirInUse: a second node on a data dir a running one
// holds is refused, with the question whether another server runs on
// it, and is not called damage.
func TestOpenRefusesDataDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	n, err := Open(testConfig(dir, fsm.New(), new(Health)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = n.Raft().Shutdown().Error()
		n.Close()
	}()
	second, err := Open(testConfig(dir, fsm.New(), new(Health)))
	if err == nil {
		_ = second.Raft().Shutdown().Error()
		second.Close()
		t.Fatal("a second node opened a data dir in use")
	}
	if errors.Is(err, ErrDamagedDataDir) || !strings.Contains(err.Error(), "is in use by another process") {
		t.Fatalf("got %v, want raft.db in use, not damaged", err)
	}
}
