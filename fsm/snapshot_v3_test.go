package fsm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRestoreVersion3 restores the rich state as format 3 wrote it, all
// JSON lines (testdata/snapshot_v3.golden, kept as it was): every record
// reads back unchanged, and snapshotting it again writes exactly the
// current golden, the same state in the current format.
func TestRestoreVersion3(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "snapshot_v3.golden"))
	if err != nil {
		t.Fatalf("read version 3 snapshot: %v", err)
	}
	if !bytes.HasPrefix(old, []byte(`{"format":"netmgr-fsm","version":3,`)) {
		t.Fatalf("testdata/snapshot_v3.golden is not a version 3 snapshot: %.80s", old)
	}
	f := restored(t, old)
	want := bytes.Replace(old, []byte(`"version":3`), []byte(`"version":4`), 1)
	if got := jsonSnapshot(t, f); !bytes.Equal(got, want) {
		t.Errorf("records changed by the version upgrade:\ngot:\n%s\nwant:\n%s", got, want)
	}
	current, err := os.ReadFile(filepath.Join("testdata", "snapshot.golden"))
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	if got := snapshotBytes(t, f); !bytes.Equal(got, current) {
		t.Errorf("version 3 snapshot rewritten differs from testdata/snapshot.golden:\ngot:\n%s\nwant:\n%s",
			jsonSnapshot(t, restored(t, got)), jsonSnapshot(t, restored(t, current)))
	}
}

// TestRestoreCorrupt feeds Restore every prefix of the golden snapshot and
// the golden with each byte changed: it must fail or succeed, never panic,
// and a prefix must never restore.
func TestRestoreCorrupt(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "snapshot.golden"))
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	for n := range len(golden) {
		if err := restoreInto(newApplier(t).f, golden[:n]); err == nil {
			t.Fatalf("the first %d of %d bytes restored, want an error", n, len(golden))
		}
	}
	for i := range golden {
		bad := bytes.Clone(golden)
		bad[i] ^= 0xa5
		_ = restoreInto(newApplier(t).f, bad)
	}
}
