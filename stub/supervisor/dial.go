package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// maxSockPath is the longest path a unix socket address holds.
const maxSockPath = 107

// askSupervisor sends req to the supervisor of directory dir and returns
// its answer. A wait request blocks until the job has ended or ctx ends.
func askSupervisor(ctx context.Context, dir string, req request) (response, error) {
	var resp response
	conn, err := dialSupervisor(ctx, dir)
	if err != nil {
		return resp, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if req.Op != opWait {
		_ = conn.SetDeadline(time.Now().Add(requestTimeout))
	}
	req.Dir = dir
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return resp, fmt.Errorf("ask supervisor of %s: %w", filepath.Base(dir), err)
	}
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return resp, fmt.Errorf("ask supervisor of %s: %w", filepath.Base(dir), err)
	}
	return resp, nil
}

// dialSupervisor connects to the supervisor of dir: the socket of its
// own, or where it has none, that of the supervisor host its state names
// (that of this version's host when it names none).
func dialSupervisor(ctx context.Context, dir string) (net.Conn, error) {
	conn, err := dialIn(ctx, dir, sockFile)
	if errors.Is(err, fs.ErrNotExist) {
		sock := filepath.Join(filepath.Dir(dir), hostSock)
		var st attemptState
		if readJSONFile(filepath.Join(dir, stateFile), &st) == nil && st.Sock != "" {
			sock = st.Sock
		}
		conn, err = dialIn(ctx, filepath.Dir(sock), filepath.Base(sock))
	}
	if err != nil {
		return nil, fmt.Errorf("dial supervisor of %s: %w", filepath.Base(dir), err)
	}
	return conn, nil
}

// dialIn connects to the unix socket name in directory dir. A path too
// long for a socket address is reached through /proc/self/fd.
func dialIn(ctx context.Context, dir, name string) (net.Conn, error) {
	path := filepath.Join(dir, name)
	var d net.Dialer
	if len(path) <= maxSockPath {
		return d.DialContext(ctx, "unix", path)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+name)
}
