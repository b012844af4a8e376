package servertest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size bytes, with at most inodes inodes
// when inodes is positive, on a new directory under the test's temp dir,
// and returns that directory; it is unmounted when the test ends. A
// small one is a real full disk for a test, without filling the
// machine's. It skips the test, saying why, when the process may not
// mount (it is not root, or lacks CAP_SYS_ADMIN in a container).
func MountTmpfs(t testing.TB, size int64, inodes int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	MountTmpfsAt(t, dir, size, inodes)
	return dir
}

// MountTmpfsAt is MountTmpfs on dir, which it makes if need be; what dir
// holds is hidden until the tmpfs is unmounted.
func MountTmpfsAt(t testing.TB, dir string, size int64, inodes int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: mounting a small tmpfs as a full disk needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
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
}

// Fill writes zeros to the file path until its file system has no space
// left, and returns how many bytes it wrote.
func Fill(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("fill: %w", err)
	}
	defer f.Close()
	n, err := io.Copy(f, zeros{})
	if !errors.Is(err, syscall.ENOSPC) {
		return n, fmt.Errorf("fill %s: %v, want no space left", path, err)
	}
	return n, nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
