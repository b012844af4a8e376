package files_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client/files"
)

func TestPackUnpackKeepsContentAndModes(t *testing.T) {
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "sim"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(t, os.MkdirAll(filepath.Join(src, "data", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "data", "sub", "in.txt"), []byte("input"), 0o644))
	data, names, err := files.Pack([]string{"sim", filepath.Join(src, "data")}, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"sim", "data"}) {
		t.Errorf("names %v", names)
	}
	if err := files.Verify(files.Sum(data), data); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	wrote, err := files.Unpack(data, dst)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wrote, []string{"sim", "data/sub/in.txt"}) {
		t.Errorf("wrote %v", wrote)
	}
	info, err := os.Stat(filepath.Join(dst, "sim"))
	if err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("sim lost its exec bit: %v %v", info, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "data", "sub", "in.txt")); string(got) != "input" {
		t.Errorf("in.txt = %q", got)
	}
}

func TestPackRefusesOverLimitAndDuplicates(t *testing.T) {
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "big"), make([]byte, 5000), 0o644))
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "big"), nil, 0o644))
	if _, _, err := files.Pack([]string{"big"}, src, 4096); err == nil || !strings.Contains(err.Error(), "size limit") {
		t.Errorf("over the limit: %v", err)
	}
	if _, _, err := files.Pack([]string{"big", "d/big"}, src, 0); err == nil || !strings.Contains(err.Error(), "also named big") {
		t.Errorf("duplicate names: %v", err)
	}
}

func TestPackGlobsSaysWhatItLeft(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "a.out"), []byte("a"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "b.out"), []byte("bb"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "huge"), make([]byte, 100), 0o644))
	data, kept, lost, err := files.PackGlobs(dir, []string{"*.out", "huge", "*.png", "../etc"}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, []string{"a.out", "b.out"}) {
		t.Errorf("kept %v", kept)
	}
	want := []string{"huge: 100 B, over the copy_out limit of 50 B", "*.png: matched nothing", "../etc: not a path inside the exec dir"}
	if !slices.Equal(lost, want) {
		t.Errorf("lost %q, want %q", lost, want)
	}
	out := t.TempDir()
	if _, err := files.Unpack(data, out); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "b.out")); string(got) != "bb" {
		t.Errorf("b.out = %q", got)
	}
}

func TestUnpackRefusesEscapes(t *testing.T) {
	src := t.TempDir()
	must(t, os.Symlink("../../etc/passwd", filepath.Join(src, "evil")))
	data, _, err := files.Pack([]string{"evil"}, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := files.Unpack(data, t.TempDir()); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("link out: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
