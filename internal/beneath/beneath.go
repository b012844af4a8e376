package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxDepth is how many directories deep a walk goes below its start. A
// deeper tree is reported to the walk's function as ErrTooDeep, not
// entered: each level holds a descriptor.
const MaxDepth = 128

// Errors of this package, each wrapped with the path it concerns.
var (
	// ErrLink means a path names, or passes through, a symbolic link.
	ErrLink = errors.New("a symbolic link")
	// ErrNotRegular means a file to be read is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotOwners means a file to be read is one the directory's
	// owner could not read (another user's file, hard-linked in).
	ErrNotOwners = errors.New("not readable by the directory's owner")
	// ErrBadName means a path is absolute, empty of a name, or has a
	// ".." in it.
	ErrBadName = errors.New("not a path inside the directory")
	// ErrTooDeep means a walk met a directory deeper than MaxDepth.
	ErrTooDeep = errors.New("nested too deep")
)

// Dir is an open directory that paths are resolved beneath. Its methods
// may be called from several goroutines; Close must come after all.
type Dir struct {
	fd   int    // O_PATH descriptor of the directory
	name string // its path, for messages
	uid  uint32 // its owner: files read must be readable by them
	gid  uint32
}

// Open opens the directory at path. Path itself is trusted (the caller's
// own), but its last component must be a directory, not a link to one.
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: describe(err)}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return &Dir{fd: fd, name: path, uid: st.Uid, gid: st.Gid}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Name is the path the directory was opened at.
func (d *Dir) Name() string { return d.name }

// Owner is the directory's owner, as which files are read.
func (d *Dir) Owner() (uid, gid uint32) { return d.uid, d.gid }

// clean checks that name is a slash-separated path inside the
// directory and returns it cleaned ("." for the directory itself).
func clean(name string) (string, error) {
	if name == "" || name == "." {
		return ".", nil
	}
	c := path.Clean(name)
	if !fs.ValidPath(c) {
		return "", fmt.Errorf("%q: %w", name, ErrBadName)
	}
	return c, nil
}

// parent opens the directory holding name, following no link on the way,
// and returns its descriptor (to close unless it is d.fd) and name's last
// component ("." for the directory itself).
func (d *Dir) parent(name string) (int, string, error) {
	c, err := clean(name)
	if err != nil {
		return -1, "", err
	}
	if c == "." {
		return d.fd, ".", nil
	}
	comps := strings.Split(c, "/")
	fd := d.fd
	for i, comp := range comps[:len(comps)-1] {
		next, err := unix.Openat(fd, comp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = d.why(fd, comp, err)
		}
		if fd != d.fd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, "", fmt.Errorf("%s: %w", strings.Join(comps[:i+1], "/"), err)
		}
		fd = next
	}
	return fd, comps[len(comps)-1], nil
}

// why turns an open's failure on dir's entry comp into ErrLink where a
// link was what stopped it.
func (d *Dir) why(dir int, comp string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dir, comp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return ErrLink
		}
	}
	return err
}

// describe maps ELOOP from O_NOFOLLOW to ErrLink.
func describe(err error) error {
	if errors.Is(err, unix.ELOOP) {
		return ErrLink
	}
	return err
}

// closeParent closes a descriptor parent returned.
func (d *Dir) closeParent(fd int) {
	if fd != d.fd && fd >= 0 {
		unix.Close(fd)
	}
}

// at runs fn on name's parent and last component.
func (d *Dir) at(op, name string, fn func(dir int, base string) error) error {
	dir, base, err := d.parent(name)
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer d.closeParent(dir)
	if err := fn(dir, base); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// Kind names the type of a file mode for messages: "a regular file", "a
// directory", "a symbolic link", "a FIFO", "a socket", "a device".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "an irregular file"
}
