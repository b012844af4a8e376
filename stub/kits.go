package stub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A start needs two new directories, the attempt's exec dir (with its
// stdout and stderr) and its supervisor dir: four new inodes before the
// job can fork. On a busy file system making
// an inode can take a millisecond (ext4 without a journal scans for
// recently deleted ones), so a dirKits makes them ahead, in the
// background, and a start renames one into place, which makes no inode.

// kitPrefix starts the name of a directory made ahead; no attempt's
// directory starts with it, so recovery skips them and New removes those
// an earlier stub left.
const kitPrefix = ".kit-"

// kitsAhead is how many directories a dirKits keeps made.
const kitsAhead = 4

// dirKits keeps up to kitsAhead empty directories under root, each
// holding the empty files files, ready to be renamed into place.
type dirKits struct {
	root  string
	files []string

	mu      sync.Mutex // guards ready, filling and closed
	ready   []string
	filling bool
	closed  bool
	wg      sync.WaitGroup // the filling goroutine
}

// take renames a ready directory to dst and reports whether it did; when
// it did not (none ready, or dst exists), the caller makes dst itself.
// It never replaces dst, not even an empty directory.
// It starts making another in the background.
func (k *dirKits) take(dst string) bool {
	k.mu.Lock()
	var kit string
	if n := len(k.ready); n > 0 {
		kit, k.ready = k.ready[n-1], k.ready[:n-1]
	}
	k.mu.Unlock()
	k.refill()
	if kit == "" {
		return false
	}
	if err := unix.Renameat2(unix.AT_FDCWD, kit, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE); err != nil {
		_ = os.RemoveAll(kit)
		return false
	}
	return true
}

// refill makes directories in the background until kitsAhead are ready,
// unless it is doing so already.
func (k *dirKits) refill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || k.filling || len(k.ready) >= kitsAhead {
		return
	}
	k.filling = true
	k.wg.Go(func() {
		for {
			kit, err := k.make()
			k.mu.Lock()
			if err != nil || k.closed {
				k.filling = false
				k.mu.Unlock()
				if err == nil {
					_ = os.RemoveAll(kit)
				}
				return // the next starts make their directories themselves
			}
			k.ready = append(k.ready, kit)
			if len(k.ready) >= kitsAhead {
				k.filling = false
				k.mu.Unlock()
				return
			}
			k.mu.Unlock()
		}
	})
}

// make makes one directory with its files.
func (k *dirKits) make() (string, error) {
	if err := os.MkdirAll(k.root, 0o700); err != nil {
		return "", fmt.Errorf("make directory ahead: %w", err)
	}
	dir, err := os.MkdirTemp(k.root, kitPrefix)
	if err != nil {
		return "", fmt.Errorf("make directory ahead: %w", err)
	}
	for _, name := range k.files {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("make directory ahead: %w", err)
		}
		_ = f.Close()
	}
	return dir, nil
}

// close stops making directories and removes the ready ones.
func (k *dirKits) close() {
	k.mu.Lock()
	k.closed = true
	ready := k.ready
	k.ready = nil
	k.mu.Unlock()
	k.wg.Wait()
	for _, kit := range ready {
		_ = os.RemoveAll(kit)
	}
}

// removeKits removes the directories an earlier stub made ahead under
// root and never used.
func removeKits(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), kitPrefix) {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}
