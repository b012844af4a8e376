package stub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
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
		var st supervisorState
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
