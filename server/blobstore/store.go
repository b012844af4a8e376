package blobstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client/files"
)

// ErrNotFound means the store holds no blob of that name.
var ErrNotFound = errors.New("no such blob")

// ErrBadName means a name is no sha256 in hex.
var ErrBadName = errors.New("not a blob name (a sha256 in hex)")

// Store is a directory of blobs. Its methods are safe for concurrent use:
// writers rename complete files into place.
type Store struct{ dir string }

// Open returns the store in dir, making it if needed, and removes the
// temporary files of writes a crash interrupted.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open blob store %s: %w", dir, err)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(sum string) (string, error) {
	if !files.ValidSum(sum) {
		return "", fmt.Errorf("blob %q: %w", sum, ErrBadName)
	}
	return filepath.Join(s.dir, sum), nil
}

// Put stores data as the blob sum after checking that data is it. A blob
// already there is left as it is.
func (s *Store) Put(sum string, data []byte) error {
	p, err := s.path(sum)
	if err != nil {
		return err
	}
	if err := files.Verify(sum, data); err != nil {
		return fmt.Errorf("store blob: %w", err)
	}
	return s.write(p, sum, data)
}

// PutVerified is Put for data its caller has just checked against sum
// (files.Verify), which it does not check again: a 100 MiB blob costs
// one SHA-256 pass less on the server that took it.
func (s *Store) PutVerified(sum string, data []byte) error {
	p, err := s.path(sum)
	if err != nil {
		return err
	}
	return s.write(p, sum, data)
}

// write keeps data, the blob sum, at p, synced before it is renamed into
// place; a blob already there is only made fresh.
func (s *Store) write(p, sum string, data []byte) error {
	if _, err := os.Stat(p); err == nil {
		now := time.Now()
		_ = os.Chtimes(p, now, now) // fresh again: not swept as unreferenced at once
		return nil
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("store blob %.12s: %w", sum, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("store blob %.12s: %w", sum, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("store blob %.12s: %w", sum, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("store blob %.12s: %w", sum, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("store blob %.12s: %w", sum, err)
	}
	return nil
}

// Get returns the blob sum, checked against its name: a blob damaged on
// disk is removed and reported as not found, so that it is fetched again.
func (s *Store) Get(sum string) ([]byte, error) {
	p, err := s.path(sum)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %.12s: %w", sum, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read blob %.12s: %w", sum, err)
	}
	if err := files.Verify(sum, data); err != nil {
		_ = os.Remove(p)
		return nil, fmt.Errorf("%w (removed): %w", err, ErrNotFound)
	}
	return data, nil
}

// Has reports whether the store holds the blob sum.
func (s *Store) Has(sum string) bool {
	p, err := s.path(sum)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// Remove removes the blob sum; removing one that is not there is no error.
func (s *Store) Remove(sum string) error {
	p, err := s.path(sum)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove blob %.12s: %w", sum, err)
	}
	return nil
}

// Entry is one blob of a store.
type Entry struct {
	Sum     string
	Size    int64
	ModTime time.Time
}

// List returns the store's blobs.
func (s *Store) List() ([]Entry, error) {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list blob store: %w", err)
	}
	var out []Entry
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") || !files.ValidSum(de.Name()) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, Entry{Sum: de.Name(), Size: info.Size(), ModTime: info.ModTime()})
	}
	return out, nil
}
