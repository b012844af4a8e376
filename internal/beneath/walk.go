package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxDirEntries is the most entries of one directory a walk lists; the
// walk's function hears of a directory with more as ErrTooMany.
const MaxDirEntries = 100000

// readDirChunk is how many entries a directory is read at a time.
const readDirChunk = 1024

// ReadDir lists the directory name, sorted by name, each entry described
// by a stat taken beneath it (no link followed). It stops after max
// entries (max <= 0: all) and then returns them with ErrTooMany.
func (d *Dir) ReadDir(name string, max int) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	err := d.at("readdir", name, func(dir int, base string) error {
		fd, err := unix.Openat(dir, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return d.why(dir, base, err)
		}
		out, err = readDirFD(fd, name, max)
		return err
	})
	return out, err
}

// ErrTooMany means a directory held more entries than asked for.
var ErrTooMany = errors.New("more entries than the limit")

// readDirFD lists the open directory fd, which it closes.
func readDirFD(fd int, name string, max int) ([]fs.DirEntry, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var names []string
	for {
		chunk, err := f.Readdirnames(readDirChunk)
		names = append(names, chunk...)
		if max > 0 && len(names) > max {
			names = names[:max]
			err = ErrTooMany
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, ErrTooMany) {
			return nil, err
		}
		if err != nil {
			return entries(fd, names), err
		}
	}
	return entries(fd, names), nil
}

// entries stats names in the directory fd, sorted, skipping any that
// vanished meanwhile.
func entries(fd int, names []string) []fs.DirEntry {
	slices.Sort(names)
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		fi := &fileInfo{name: n}
		if unix.Fstatat(fd, n, &fi.st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			out = append(out, dirEntry{fi})
		}
	}
	return out
}

// WalkDir walks the tree at name as filepath.WalkDir does, in lexical
// order, calling fn with slash-separated paths relative to the
// directory. It never follows a link (a link is passed to fn as one),
// opens each directory beneath the one above it, and does not enter a
// directory deeper than MaxDepth below name: fn gets it with ErrTooDeep.
// Of a directory with more than MaxDirEntries entries, the first (by
// name) are walked and fn gets the directory again with ErrTooMany.
// fn may return fs.SkipDir or fs.SkipAll.
func (d *Dir) WalkDir(name string, fn fs.WalkDirFunc) error {
	c, err := clean(name)
	if err != nil {
		return fn(name, nil, err)
	}
	fi, err := d.Lstat(c)
	if err != nil {
		return fn(c, nil, err)
	}
	err = d.walk(c, dirEntry{fi.(*fileInfo)}, 0, fn)
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// walk calls fn on p and, when it is a directory, on what is in it.
func (d *Dir) walk(p string, e fs.DirEntry, depth int, fn fs.WalkDirFunc) error {
	if err := fn(p, e, nil); err != nil || !e.IsDir() {
		if errors.Is(err, fs.SkipDir) && e.IsDir() {
			return nil
		}
		return err
	}
	if depth >= MaxDepth {
		return skipDirOK(fn(p, e, fmt.Errorf("%s: %w (over %d directories)", p, ErrTooDeep, MaxDepth)))
	}
	list, err := d.ReadDir(p, MaxDirEntries)
	if err != nil && !errors.Is(err, ErrTooMany) {
		return skipDirOK(fn(p, e, err))
	}
	if err != nil {
		// The first MaxDirEntries are walked; fn hears of the rest.
		if err := fn(p, e, fmt.Errorf("%s: %w (over %d entries)", p, ErrTooMany, MaxDirEntries)); err != nil {
			return skipDirOK(err)
		}
	}
	for _, child := range list {
		cp := path.Join(p, child.Name())
		if err := d.walk(cp, child, depth+1, fn); err != nil {
			if errors.Is(err, fs.SkipDir) {
				return nil
			}
			return err
		}
	}
	return nil
}

// skipDirOK turns a SkipDir from a directory's second call into nil.
func skipDirOK(err error) error {
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

// ChownAll gives the tree at name, links themselves and all, to uid:gid.
func (d *Dir) ChownAll(name string, uid, gid int) error {
	return d.WalkDir(name, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return d.Lchown(p, uid, gid)
	})
}

// Printable quotes a name taken from the directory for a message when it
// holds anything but printable characters; others pass as they are.
func Printable(name string) string {
	if strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffd }) >= 0 {
		return fmt.Sprintf("%q", name)
	}
	return name
}
