package stub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of size bytes, with at most inodes inodes
// when inodes is positive, on a new directory under the test's temp dir
// and returns it; it is unmounted when the test ends. It skips the test,
// saying why, when the process may not mount. (servertest.MountTmpfs is
// the same for other packages; it imports this one.)
func mountTmpfs(t *testing.T, size int64, inodes int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: mounting a small tmpfs as a full disk needs root")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "size=" + strconv.FormatInt(size, 10) + ",mode=0755"
	if inodes > 0 {
		opts += ",nr_inodes=" + strconv.Itoa(inodes)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs to stand for a full disk: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes zeros to path until its file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v, want no space left", path, err)
			}
			return
		}
	}
}

// fillInodes makes empty files in dir until its file system has no inode
// left, and returns how many it made.
func fillInodes(t *testing.T, dir string) int {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("inode%d", i)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill inodes of %s: %v, want no space left", dir, err)
			}
			return i
		}
		_ = f.Close()
	}
}
