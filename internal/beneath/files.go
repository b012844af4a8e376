package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Lstat describes name without following a link, there or on the way.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	var fi *fileInfo
	err := d.at("lstat", name, func(dir int, base string) error {
		fi = &fileInfo{name: path.Base(name)}
		return unix.Fstatat(dir, base, &fi.st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// OpenRegular opens name to be read. It must be a regular file the
// directory's owner could read; anything else (a link, FIFO, socket,
// device, directory, or another user's file) is refused without being
// read and without blocking. The file's info comes from the open
// descriptor, so it describes what is read.
func (d *Dir) OpenRegular(name string) (*os.File, fs.FileInfo, error) {
	var f *os.File
	var fi *fileInfo
	err := d.at("open", name, func(dir int, base string) error {
		fd, err := unix.Openat(dir, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return d.why(dir, base, err)
		}
		fi = &fileInfo{name: path.Base(name)}
		if err := unix.Fstat(fd, &fi.st); err != nil {
			unix.Close(fd)
			return err
		}
		if err := d.mayRead(&fi.st); err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), path.Join(d.name, name))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return f, fi, nil
}

// mayRead checks that st is a regular file the directory's owner could
// read by its mode bits (the owner's own, or its primary group's, or
// anyone's). Root, owning the directory, reads anything regular.
func (d *Dir) mayRead(st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w (%s)", ErrNotRegular, Kind(modeOf(st.Mode)))
	}
	switch {
	case d.uid == 0,
		st.Uid == d.uid && st.Mode&0o400 != 0,
		st.Uid != d.uid && st.Gid == d.gid && st.Mode&0o040 != 0,
		st.Uid != d.uid && st.Gid != d.gid && st.Mode&0o004 != 0:
		return nil
	}
	return fmt.Errorf("%w (owned by uid %d, mode %04o)", ErrNotOwners, st.Uid, st.Mode&0o7777)
}

// OpenAppend opens name to append to, making it (mode perm) if it is
// not there. It must be a regular file; a link, FIFO or anything else
// is refused without blocking.
func (d *Dir) OpenAppend(name string, perm fs.FileMode) (*os.File, error) {
	var f *os.File
	err := d.at("open", name, func(dir int, base string) error {
		fd, err := unix.Openat(dir, base, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != nil {
			return d.why(dir, base, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return fmt.Errorf("%w (%s)", ErrNotRegular, Kind(modeOf(st.Mode)))
		}
		// Writes to a regular file never block; clear the flag so a
		// child that inherits the descriptor sees an ordinary one.
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), path.Join(d.name, name))
		return nil
	})
	return f, err
}

// Create makes name a new, empty regular file with mode perm, removing
// whatever non-directory is there first (a link is removed, never
// followed). It fails if a directory is there.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	var f *os.File
	err := d.at("create", name, func(dir int, base string) error {
		if err := unix.Unlinkat(dir, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		fd, err := unix.Openat(dir, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != nil {
			return err
		}
		f = os.NewFile(uintptr(fd), path.Join(d.name, name))
		return nil
	})
	return f, err
}

// WriteFile makes name a new regular file holding data, as Create.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := d.Create(name, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Mkdir makes the directory name (mode perm); one there already is
// fine, anything else there fails.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	return d.at("mkdir", name, func(dir int, base string) error {
		err := unix.Mkdirat(dir, base, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			var st unix.Stat_t
			serr := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW)
			switch {
			case serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
				return nil
			case serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
				return ErrLink
			case serr == nil:
				return fmt.Errorf("%w: %s is there", unix.EEXIST, Kind(modeOf(st.Mode)))
			}
		}
		return err
	})
}

// MkdirAll makes the directory name and any missing parents (mode perm),
// through no link.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	if c == "." {
		return nil
	}
	if parent := path.Dir(c); parent != "." {
		if err := d.MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	return d.Mkdir(c, perm)
}

// Symlink makes name a symbolic link to target, replacing a
// non-directory there. The link is never followed by this package.
func (d *Dir) Symlink(target, name string) error {
	return d.at("symlink", name, func(dir int, base string) error {
		if err := unix.Unlinkat(dir, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return unix.Symlinkat(target, dir, base)
	})
}

// Readlink returns the target of the link name.
func (d *Dir) Readlink(name string) (string, error) {
	var target string
	err := d.at("readlink", name, func(dir int, base string) error {
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dir, base, buf)
		if err != nil {
			return err
		}
		target = string(buf[:n])
		return nil
	})
	return target, err
}

// Lchown gives name (a link itself, not its target) to uid:gid.
func (d *Dir) Lchown(name string, uid, gid int) error {
	return d.at("chown", name, func(dir int, base string) error {
		if base == "." {
			return unix.Fchownat(dir, "", uid, gid, unix.AT_EMPTY_PATH)
		}
		return unix.Fchownat(dir, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// ChmodDir sets the permission bits of the directory name. A link, or
// anything but a directory, is refused. The change goes through an
// O_PATH descriptor of the directory itself (by its /proc/self/fd
// name), so it needs no permission on the directory: a job's chmod 000
// of its own directory does not stop it.
func (d *Dir) ChmodDir(name string, perm fs.FileMode) error {
	return d.at("chmod", name, func(dir int, base string) error {
		fd, err := unix.Openat(dir, base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return d.why(dir, base, err)
		}
		defer unix.Close(fd)
		return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(perm.Perm()))
	})
}
