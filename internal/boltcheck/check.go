package boltcheck

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrDamaged means the file is corrupt or truncated: bbolt cannot use
	// it. Errors that wrap it are *DamagedError.
	ErrDamaged = errors.New("damaged")
	// ErrInUse means another process holds the file open for writing.
	ErrInUse = errors.New("in use by another process")
)

// DamagedError says what is wrong with a damaged file. It Is ErrDamaged.
type DamagedError struct {
	Path   string
	What   string // "corrupt" or "truncated"
	Detail string // one line: what bbolt or the check found
}

func (e *DamagedError) Error() string        { return e.Path + " is " + e.What + ": " + e.Detail }
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// Damaged returns the error for a file found damaged by other means than
// Check: what is "corrupt" or "truncated", detail one line saying how.
func Damaged(path, what, detail string) error {
	return &DamagedError{Path: path, What: what, Detail: detail}
}

// lockTimeout bounds how long Check waits for another process's lock on
// the file.
const lockTimeout = time.Second

// Check reports whether the bbolt file at path is whole: nil when it is,
// when it does not exist or is empty (bbolt makes a new one), an error
// wrapping ErrDamaged that says what is wrong, or one wrapping ErrInUse.
// It reads every page reachable from the file's current meta page, so it
// takes time in proportion to the file's live data; it blocks for that
// long and is safe for concurrent use.
func Check(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if fi.Size() == 0 {
		return nil
	}
	var db *bolt.DB
	err = Protect(func() error {
		var err error
		db, err = bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil && strings.HasPrefix(err.Error(), errSize.Error()) {
			err = errSize
		}
		return err
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("check %s: %w", path, ErrInUse)
	case errors.Is(err, errSize):
		return Damaged(path, "truncated", fmt.Sprintf("%d bytes, shorter than its two meta pages", fi.Size()))
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return Damaged(path, "corrupt", "neither meta page is valid ("+err.Error()+")")
	case errors.Is(err, berrors.ErrVersionMismatch):
		return Damaged(path, "corrupt", "its meta pages name another bbolt version")
	case err != nil:
		return Damaged(path, "corrupt", problem(err))
	}
	defer db.Close()
	var short int64
	err = Protect(func() error {
		return db.View(func(tx *bolt.Tx) error {
			if need := tx.Size(); fi.Size() < need {
				short = need
				return nil
			}
			return walk(tx.Cursor(), 0)
		})
	})
	switch {
	case short > 0:
		return Damaged(path, "truncated", fmt.Sprintf("%d bytes, its pages need %d", fi.Size(), short))
	case err != nil:
		return Damaged(path, "corrupt", problem(err))
	}
	return nil
}

// errSize is the error bbolt's Open returns for a file shorter than its
// meta pages ("file size too small 5000"); bbolt has no sentinel for it.
var errSize = errors.New("file size too small")

// problem is a one-line description of what bbolt met: its error or the
// message of its panic.
func problem(why error) string {
	s := why.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return "bbolt: " + strings.TrimPrefix(s, "assertion failed: ")
}

// walk reads every key and value under c, descending into nested
// buckets. Reading a value's first and last byte maps the pages it spans.
func walk(c *bolt.Cursor, depth int) error {
	if depth > 64 {
		return errors.New("buckets nested more than 64 deep")
	}
	var sink byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if b := c.Bucket().Bucket(k); b != nil {
				if err := walk(b.Cursor(), depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if len(v) > 0 {
			sink ^= v[0] ^ v[len(v)-1]
		}
		sink ^= k[len(k)-1]
	}
	_ = sink
	return nil
}

// Protect runs fn in a goroutine of its own and returns its error, or,
// when fn panics or faults on memory (as bbolt does on a damaged file:
// the pages are memory-mapped), an error saying so. It blocks until fn
// returns.
func Protect(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%v", r)
			}
		}()
		done <- fn()
	}()
	return <-done
}
