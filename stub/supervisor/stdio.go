package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Stdio connects an interactive job (package client/session) to its stub
// instead of /dev/null and the files stdout and stderr: either the slave
// of a pseudo-terminal whose master the stub holds, or three FIFOs in the
// supervisor directory whose other ends the stub holds. Paths, not
// descriptors: the host's protocol is JSON on a socket, and a supervisor
// of one attempt reads its spec from a file; the stub holds its ends open
// before it asks, so the supervisor's opens never wait.
type Stdio struct {
	// TTY is the slave of a pseudo-terminal (/dev/pts/N), which the stub
	// made and gave to the job's user: the job's stdin, stdout, stderr
	// and controlling terminal, in a session of its own.
	TTY string `json:"tty,omitempty"`
	// Stdin, Stdout and Stderr are FIFOs in the supervisor directory.
	Stdin  string `json:"stdin,omitempty"`
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
}

// connect opens io's files for cmd and returns them, to be closed once
// the job has started; dir is the supervisor directory the FIFOs must be
// in.
func (io *Stdio) connect(cmd *exec.Cmd, dir string) ([]*os.File, error) {
	if io.TTY != "" {
		if !strings.HasPrefix(io.TTY, "/dev/pts/") {
			return nil, fmt.Errorf("%w: terminal %q is not a pseudo-terminal", ErrFiles, io.TTY)
		}
		f, err := os.OpenFile(io.TTY, os.O_RDWR|unix.O_NOCTTY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: open terminal: %w", ErrFiles, err)
		}
		if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			_ = f.Close()
			return nil, fmt.Errorf("%w: terminal %q is not a character device", ErrFiles, io.TTY)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, f
		// A session of its own, the terminal its controlling terminal:
		// Ctrl-C reaches its foreground group through the line
		// discipline. Its session id is also its process group.
		attr := cmd.SysProcAttr
		attr.Setpgid, attr.Setsid, attr.Setctty, attr.Ctty = false, true, true, 0
		return []*os.File{f}, nil
	}
	var files []*os.File
	for i, p := range []string{io.Stdin, io.Stdout, io.Stderr} {
		if filepath.Dir(p) != dir {
			closeAll(files)
			return nil, fmt.Errorf("%w: %q is not in the supervisor directory", ErrFiles, p)
		}
		flag := os.O_WRONLY
		if i == 0 {
			flag = os.O_RDONLY
		}
		// Opened without waiting, then made blocking again: the job
		// reads and writes it as it would a pipe.
		fd, err := unix.Open(p, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			if err = unix.SetNonblock(fd, false); err != nil {
				_ = unix.Close(fd)
			}
		}
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("%w: open %s: %w", ErrFiles, filepath.Base(p), err)
		}
		f := os.NewFile(uintptr(fd), p)
		if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			_ = f.Close()
			closeAll(files)
			return nil, fmt.Errorf("%w: %s is not a FIFO", ErrFiles, filepath.Base(p))
		}
		files = append(files, f)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[1], files[2]
	return files, nil
}

// closeAll closes files.
func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
