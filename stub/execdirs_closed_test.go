package stub

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClosedToOthers(t *testing.T) {
	// t.TempDir's directories are 0700: open them to others first.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if d := closedToOthers(base); d != "" {
		t.Skipf("the temporary directory lies below %s, closed to others: set TMPDIR elsewhere to run this test", d)
	}
	mk := func(path string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(base, path)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := mk("open", 0o755)
	searchOnly := mk("open/search-only", 0o711)
	data := mk("data", 0o755)
	exec := mk("data/exec", 0o755)
	mk("data", 0o700) // a stub's data dir, the exec dir inside it
	grp := mk("group", 0o750)
	t.Cleanup(func() { _ = os.Chmod(data, 0o755) })
	tests := []struct {
		name, dir, want string
	}{
		{"every ancestor open", open, ""},
		{"search without read is enough", searchOnly, ""},
		{"inside a 0700 data dir", exec, data},
		{"the dir itself closed", grp, grp},
		{"missing dir", filepath.Join(base, "nonexistent"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := closedToOthers(tt.dir); got != tt.want {
				t.Errorf("closedToOthers(%s) = %q, want %q", tt.dir, got, tt.want)
			}
		})
	}
}
