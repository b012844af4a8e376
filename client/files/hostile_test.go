package files_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/netmgr/netmgr/client/files"
)

// archive builds a tar archive from headers; regular files hold body.
func archive(t *testing.T, body string, hs ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		must(t, tw.WriteHeader(&h))
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	must(t, tw.Close())
	return buf.Bytes()
}

// TestUnpackFollowsNoLinkItMade: links that each point inside the
// directory on their own, but chain to its parent (x -> a/b/c/.., where
// a/b/c -> ../..), cannot carry a later entry outside.
func TestUnpackFollowsNoLinkItMade(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "exec")
	must(t, os.Mkdir(dir, 0o755))
	data := archive(t, "pwned",
		tar.Header{Name: "a/b/", Typeflag: tar.TypeDir},
		tar.Header{Name: "a/b/c", Typeflag: tar.TypeSymlink, Linkname: "../.."},
		tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: "a/b/c/.."},
		tar.Header{Name: "x/escaped", Typeflag: tar.TypeReg},
	)
	_, err := files.Unpack(data, dir)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("unpack through a chained link: %v, want refused as a symbolic link", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "escaped")); err == nil {
		t.Error("a file was written outside the directory")
	}
	// A file named like a link there already replaces the link.
	must(t, os.WriteFile(filepath.Join(root, "secret"), []byte("TOPSECRET"), 0o600))
	must(t, os.Symlink(filepath.Join(root, "secret"), filepath.Join(dir, "out")))
	if _, err := files.Unpack(archive(t, "mine", tar.Header{Name: "out", Typeflag: tar.TypeReg}), dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "secret")); string(got) != "TOPSECRET" {
		t.Errorf("unpack wrote through a link: the secret is %q", got)
	}
}

func TestUnpackDropsSetuid(t *testing.T) {
	dir := t.TempDir()
	data := archive(t, "#!/bin/sh\n", tar.Header{Name: "tool", Typeflag: tar.TypeReg, Mode: 0o4755 | 0o2000})
	if _, err := files.Unpack(data, dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "tool"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want -rwxr-xr-x", fi.Mode())
	}
}

func TestPackGlobsTakesNothingAJobPlanted(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "exec")
	must(t, os.Mkdir(dir, 0o755))
	secret := filepath.Join(root, "secret")
	must(t, os.WriteFile(secret, []byte("TOPSECRET"), 0o600))
	must(t, os.Symlink(secret, filepath.Join(dir, "result")))
	must(t, os.Symlink(root, filepath.Join(dir, "outdir")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "res"), 0o755))
	must(t, os.Symlink(secret, filepath.Join(dir, "res", "inner")))
	must(t, os.WriteFile(filepath.Join(dir, "res", "ok"), []byte("fine"), 0o644))
	big, err := os.Create(filepath.Join(dir, "sparse"))
	must(t, err)
	must(t, big.Truncate(100<<30)) // 100 GiB, no blocks
	must(t, big.Close())
	name := "esc\x1b[31m\r\n"
	must(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644))
	data, kept, lost, err := files.PackGlobs(dir, []string{"result", "outdir/secret", "outdir/*", "pipe", "res", "sparse", "esc*"}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("TOPSECRET")) {
		t.Fatal("the archive holds the secret")
	}
	if want := []string{"res/ok", name}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	all := strings.Join(lost, "\n")
	for _, want := range []string{
		"result: a symbolic link, not kept",
		"outdir/secret: outdir: a symbolic link",
		"outdir: a symbolic link", // the glob's directory
		"pipe: a FIFO, not a regular file",
		"res/inner: a symbolic link, not kept",
		"sparse: 100 GiB, over the copy_out limit of 1 MiB",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("lost lacks %q:\n%s", want, all)
		}
	}
	if strings.ContainsAny(all, "\x1b\r") {
		t.Errorf("lost holds raw control bytes: %q", all)
	}
}

func TestPackGlobsStopsAtTheFileLimit(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "many"), 0o755))
	for i := range files.MaxOutputFiles + 50 {
		must(t, os.WriteFile(filepath.Join(dir, "many", fmt.Sprintf("f%05d.out", i)), nil, 0o644))
	}
	_, kept, lost, err := files.PackGlobs(dir, []string{"many/*.out"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != files.MaxOutputFiles {
		t.Errorf("kept %d files, want %d", len(kept), files.MaxOutputFiles)
	}
	want := fmt.Sprintf("many/*.out: 50 more files not kept: over the copy_out limit of %d files", files.MaxOutputFiles)
	if !slices.Contains(lost, want) {
		t.Errorf("lost %q, want it to hold %q", lost, want)
	}
}
