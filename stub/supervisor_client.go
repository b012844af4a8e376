package stub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
func askSupervisor(ctx context.Context, dir string, req supRequest) (supResponse, error) {
	var resp supResponse
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

// dialSupervisor connects to the socket of the supervisor of dir. A path
// too long for a socket address is reached through /proc/self/fd.
func dialSupervisor(ctx context.Context, dir string) (net.Conn, error) {
	path := filepath.Join(dir, sockFile)
	var d net.Dialer
	if len(path) <= maxSockPath {
		conn, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return nil, fmt.Errorf("dial supervisor of %s: %w", filepath.Base(dir), err)
		}
		return conn, nil
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dial supervisor of %s: %w", filepath.Base(dir), &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(fd)
	conn, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+sockFile)
	if err != nil {
		return nil, fmt.Errorf("dial supervisor of %s: %w", filepath.Base(dir), err)
	}
	return conn, nil
}

// signalSupervised asks the supervisor of dir to signal its job.
func signalSupervised(ctx context.Context, dir string, sig unix.Signal, grace time.Duration) error {
	resp, err := askSupervisor(ctx, dir, supRequest{Op: opSignal, Signal: int(sig), GraceMS: grace.Milliseconds()})
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}
