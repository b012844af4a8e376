package beneath

import (
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// fileInfo is an fs.FileInfo made from a stat taken relative to a
// directory descriptor. Its Sys is the *unix.Stat_t.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

var _ fs.FileInfo = (*fileInfo)(nil)

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return modeOf(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }

// modeOf turns a stat's st_mode into an fs.FileMode, as package os does.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// dirEntry is an fs.DirEntry whose Info is a stat relative to the
// directory's descriptor, taken when the entry was read (os.File's
// entries stat by path, which would follow links on the way).
type dirEntry struct{ info *fileInfo }

var _ fs.DirEntry = dirEntry{}

func (e dirEntry) Name() string               { return e.info.name }
func (e dirEntry) IsDir() bool                { return e.info.IsDir() }
func (e dirEntry) Type() fs.FileMode          { return e.info.Mode().Type() }
func (e dirEntry) Info() (fs.FileInfo, error) { return e.info, nil }
func (e dirEntry) String() string             { return fs.FormatDirEntry(e) }
