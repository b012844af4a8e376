package beneath_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/netmgr/netmgr/internal/beneath"
)

// nobody is the uid and gid the owner tests give the directory.
const nobody = 65534

// setup makes a directory with a secret outside it (root-only when the
// test runs as root) and opens the directory.
func setup(t *testing.T) (d *beneath.Dir, dir, secret string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "exec")
	must(t, os.Mkdir(dir, 0o755))
	secret = filepath.Join(root, "secret")
	must(t, os.WriteFile(secret, []byte("TOPSECRET"), 0o600))
	d, err := beneath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dir, secret
}

func TestOpenRegularRefusesWhatIsNotTheOwnersFile(t *testing.T) {
	d, dir, secret := setup(t)
	must(t, os.WriteFile(filepath.Join(dir, "ok"), []byte("fine"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(dir, "link")))
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(dir, "up")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	for _, tc := range []struct {
		name string
		want error
	}{
		{"link", beneath.ErrLink},
		{"up/secret", beneath.ErrLink},
		{"fifo", beneath.ErrNotRegular},
		{"sub", beneath.ErrNotRegular},
		{"../secret", beneath.ErrBadName},
		{"/etc/passwd", beneath.ErrBadName},
		{"missing", fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := d.OpenRegular(tc.name)
			if err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				t.Fatalf("OpenRegular(%q) read %q, want %v", tc.name, b, tc.want)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("OpenRegular(%q) = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
	f, fi, err := d.OpenRegular("ok")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "fine" || fi.Size() != 4 {
		t.Errorf("ok: read %q, size %d", b, fi.Size())
	}
}

func TestOpenRegularRefusesAnotherUsersHardLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: the test gives a directory to another uid and hard-links a root-only file into it, which needs root")
	}
	d, dir, secret := setup(t)
	must(t, os.Link(secret, filepath.Join(dir, "hard")))
	must(t, os.WriteFile(filepath.Join(dir, "mine"), []byte("mine"), 0o600))
	must(t, os.Chown(filepath.Join(dir, "mine"), nobody, nobody))
	must(t, os.Chown(dir, nobody, nobody))
	d.Close()
	d, err := beneath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.OpenRegular("hard"); !errors.Is(err, beneath.ErrNotOwners) {
		t.Errorf("a root-only file hard-linked in: %v, want %v", err, beneath.ErrNotOwners)
	}
	f, _, err := d.OpenRegular("mine")
	if err != nil {
		t.Fatalf("the owner's own file: %v", err)
	}
	f.Close()
}

func TestOpenAppendRefusesLinksAndFIFOsWithoutBlocking(t *testing.T) {
	d, dir, secret := setup(t)
	must(t, os.Symlink(secret, filepath.Join(dir, "stdout")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "stderr"), 0o644))
	if _, err := d.OpenAppend("stdout", 0o600); !errors.Is(err, beneath.ErrLink) {
		t.Errorf("append to a link: %v, want %v", err, beneath.ErrLink)
	}
	// A FIFO with no reader: an open to write would block without
	// O_NONBLOCK; with it, the open fails at once.
	if _, err := d.OpenAppend("stderr", 0o600); err == nil {
		t.Error("append to a FIFO: opened, want refused")
	}
	f, err := d.OpenAppend("new", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, _ := os.ReadFile(secret); string(got) != "TOPSECRET" {
		t.Errorf("the secret became %q", got)
	}
}

func TestCreateReplacesALinkAndNeverWritesThroughIt(t *testing.T) {
	d, dir, secret := setup(t)
	must(t, os.Symlink(secret, filepath.Join(dir, "hostfile")))
	must(t, d.WriteFile("hostfile", []byte("a\nb\n"), 0o644))
	if got, _ := os.ReadFile(secret); string(got) != "TOPSECRET" {
		t.Errorf("the secret became %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "hostfile")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("hostfile: %v %v, want a regular file", fi, err)
	}
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(dir, "d")))
	if err := d.WriteFile("d/secret", []byte("x"), 0o644); !errors.Is(err, beneath.ErrLink) {
		t.Errorf("create through a linked directory: %v, want %v", err, beneath.ErrLink)
	}
	if err := d.MkdirAll("d/sub", 0o755); !errors.Is(err, beneath.ErrLink) {
		t.Errorf("mkdir through a linked directory: %v, want %v", err, beneath.ErrLink)
	}
	if err := d.ChmodDir("d", 0o777); !errors.Is(err, beneath.ErrLink) {
		t.Errorf("chmod of a link: %v, want %v", err, beneath.ErrLink)
	}
	if got, _ := os.ReadFile(secret); string(got) != "TOPSECRET" {
		t.Errorf("the secret became %q", got)
	}
}

func TestWalkDirFollowsNoLinkAndStopsAtMaxDepth(t *testing.T) {
	d, dir, _ := setup(t)
	must(t, os.Symlink("/", filepath.Join(dir, "root")))
	must(t, os.Symlink(".", filepath.Join(dir, "loop")))
	deep := dir
	for range beneath.MaxDepth + 5 {
		deep = filepath.Join(deep, "d")
	}
	must(t, os.MkdirAll(deep, 0o755))
	var seen, links, tooDeep int
	err := d.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, beneath.ErrTooDeep) {
			tooDeep++
			return nil
		}
		if err != nil {
			return err
		}
		seen++
		if e.Type()&fs.ModeSymlink != 0 {
			links++
		}
		if strings.HasPrefix(p, "root/") || strings.HasPrefix(p, "loop/") {
			t.Errorf("walked into a link: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if links != 2 || tooDeep != 1 || seen != 1+2+beneath.MaxDepth {
		t.Errorf("seen %d, links %d, too deep %d; want %d, 2, 1", seen, links, tooDeep, 1+2+beneath.MaxDepth)
	}
}

func TestChownAllGivesTheTreeAndNotALinksTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: chown to another uid needs root")
	}
	d, dir, secret := setup(t)
	must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a", "b", "f"), nil, 0o644))
	must(t, os.Symlink(secret, filepath.Join(dir, "a", "s")))
	must(t, d.ChownAll(".", nobody, nobody))
	for _, p := range []string{".", "a", "a/b", "a/b/f", "a/s"} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != nobody {
			t.Errorf("%s: uid %d, want %d", p, uid, nobody)
		}
	}
	fi, _ := os.Stat(secret)
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("the secret's uid became %d", uid)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"out.txt":      "out.txt",
		"résumé":       "résumé",
		"a\x1b[31mb":   `"a\x1b[31mb"`,
		"line\nbreak":  `"line\nbreak"`,
		"bad\xffbytes": `"bad\xffbytes"`,
	} {
		if got := beneath.Printable(in); got != want {
			t.Errorf("Printable(%q) = %s, want %s", in, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
