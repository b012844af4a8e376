package stub

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/internal/testwait"
)

// kitNames lists the directories made ahead under root.
func kitNames(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("read %s: %v", root, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), kitPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// Directories made ahead: the first take finds none and starts making
// kitsAhead; a later take renames one, files and all, into place; close
// removes the rest, and removeKits what an earlier stub left.
func TestDirKits(t *testing.T) {
	root := t.TempDir()
	k := &dirKits{root: root, files: []string{"stdout", "stderr"}}
	if k.take(filepath.Join(root, "a")) {
		t.Fatalf("took a directory before any was made")
	}
	testwait.For(t, waitTimeout, "directories made ahead", func() bool { return len(kitNames(t, root)) == kitsAhead })

	dst := filepath.Join(root, "1.0.1")
	if !k.take(dst) {
		t.Fatalf("take: got false, want a directory renamed to %s", dst)
	}
	for _, name := range []string{"stdout", "stderr"} {
		if fi, err := os.Stat(filepath.Join(dst, name)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: got %v, want an empty file", name, err)
		}
	}
	testwait.For(t, waitTimeout, "the taken directory replaced", func() bool { return len(kitNames(t, root)) == kitsAhead })

	// A taken directory's name must be free: an attempt's directory that
	// exists with files in it is left alone.
	busy := filepath.Join(root, "2.0.1")
	if err := os.MkdirAll(busy, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(busy, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if k.take(busy) {
		t.Errorf("took a directory onto %s, which holds a file", busy)
	}
	if _, err := os.Stat(filepath.Join(busy, "keep")); err != nil {
		t.Errorf("the existing directory lost its file: %v", err)
	}

	// Not even an empty one is replaced: rename(2) would, so take must
	// not use it.
	testwait.For(t, waitTimeout, "the directories made ahead again", func() bool { return len(kitNames(t, root)) == kitsAhead })
	empty := filepath.Join(root, "4.0.1")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if k.take(empty) {
		t.Errorf("took a directory onto %s, which exists (empty)", empty)
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("the existing empty directory changed: %v, %v", entries, err)
	}
	_ = os.Remove(empty)

	k.close()
	if got := kitNames(t, root); len(got) != 0 {
		t.Errorf("after close: got %v, want no directories made ahead", got)
	}
	if k.take(filepath.Join(root, "3.0.1")) {
		t.Errorf("took a directory after close")
	}

	left := filepath.Join(root, kitPrefix+"left")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	removeKits(root)
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"1.0.1", "2.0.1"}; !slices.Equal(names, want) {
		t.Errorf("after removeKits: got %v, want %v", names, want)
	}
}
