// Package beneath opens, makes, lists and walks files inside a
// directory that someone else controls, as a root process must: a job's
// exec dir, into which the job may have put symbolic links, FIFOs,
// sockets, hard links to other users' files, deep trees or names with
// control characters.
//
// Every path is taken relative to the directory (an open descriptor, never
// a path string), one component at a time with O_NOFOLLOW, so no
// symbolic link anywhere on it is followed, none of it can name "..",
// and a directory renamed or swapped for a link meanwhile cannot send a
// lookup outside. Files are opened without blocking (O_NONBLOCK), and a
// file opened to be read must be a regular file that the directory's
// owner could read by its mode bits: a hard link to /etc/shadow in a
// user's exec dir is refused though root could read it. A file is made
// only with O_EXCL, so never through a link. Walks never follow links,
// so they cannot loop, and stop at MaxDepth.
//
// The owner's read right is judged by the mode bits alone: its own, its
// primary group's or everyone's; supplementary groups are not consulted,
// so a file readable only through one is refused rather than risked. A
// walk opens each directory beneath the one above and lists at most
// MaxDirEntries entries of one directory. Component by component was
// chosen over openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): the same
// guarantee on every Linux, one code path to test, and messages that name
// the component that was a link.
//
// It is not a sandbox for code: it guards the root process's own file
// operations. It is Linux only, like the stub.
package beneath
