package ckptcache

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/netmgr/netmgr/client/files"
)

// MaxEntries and MaxBytes bound what a Cache holds; the oldest archives
// go first. A few archives cover the attempts a machine restarts at
// once; a checkpoint larger than MaxBytes is not cached at all.
const (
	MaxEntries = 4
	MaxBytes   = 1 << 30
)

// tmpPrefix names the files of writes not yet renamed into place.
const tmpPrefix = ".tmp-"

// Cache is a directory of checkpoint archives named by their sums. Its
// methods are safe for concurrent use.
type Cache struct {
	dir string
	mu  sync.Mutex // orders Put's eviction against other Puts
}

// Open returns the cache in dir, making it (mode 0700) if needed and
// removing what an interrupted write left.
func Open(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open checkpoint cache: %w", err)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*"))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
	return &Cache{dir: dir}, nil
}

// Put keeps data, whose sum is sum, removing the oldest archives past
// the bounds. It is not synced: a crash may lose it, and Get then finds
// it missing or damaged.
func (c *Cache) Put(sum string, data []byte) error {
	if !files.ValidSum(sum) {
		return fmt.Errorf("cache checkpoint %q: not a SHA-256 name", sum)
	}
	if int64(len(data)) > MaxBytes {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.evict(int64(len(data))); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("cache checkpoint %.12s: %w", sum, err)
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cache checkpoint %.12s: %w", sum, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cache checkpoint %.12s: %w", sum, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(c.dir, sum)); err != nil {
		return fmt.Errorf("cache checkpoint %.12s: %w", sum, err)
	}
	return nil
}

// Get returns the archive sum, checked against its name, and whether the
// cache held it whole. A damaged archive is removed.
func (c *Cache) Get(sum string) ([]byte, bool) {
	if !files.ValidSum(sum) {
		return nil, false
	}
	p := filepath.Join(c.dir, sum)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if files.Verify(sum, data) != nil {
		_ = os.Remove(p)
		return nil, false
	}
	return data, true
}

// entry is one archive in the cache.
type entry struct {
	name string
	size int64
	mod  int64
}

// evict removes the oldest archives until one more of size fits the
// bounds.
func (c *Cache) evict(size int64) error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("read checkpoint cache: %w", err)
	}
	var es []entry
	var total int64
	for _, de := range des {
		if strings.HasPrefix(de.Name(), tmpPrefix) {
			continue
		}
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read checkpoint cache: %w", err)
		}
		es = append(es, entry{de.Name(), info.Size(), info.ModTime().UnixNano()})
		total += info.Size()
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.mod, b.mod), strings.Compare(a.name, b.name))
	})
	for len(es) > 0 && (len(es)+1 > MaxEntries || total+size > MaxBytes) {
		if err := os.Remove(filepath.Join(c.dir, es[0].name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("evict from checkpoint cache: %w", err)
		}
		total -= es[0].size
		es = es[1:]
	}
	return nil
}
