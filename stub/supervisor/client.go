package stub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// hostClient is the stub's side of its supervisor host: it finds the host
// running on its attempts directory or starts one, holds a lifeline to it
// while the stub runs, on which the host pushes the results of the jobs
// that end, and asks it to start attempts.
type hostClient struct {
	root string // the attempts directory, absolute
	log  *slog.Logger

	mu       sync.Mutex // guards lifeline, closed and spawned; held while a host starts
	lifeline *lifeline
	closed   bool
	spawned  []<-chan struct{} // per host this client started: closed once it is reaped
}

// start asks the host to start spec as the attempt of directory dir, and
// returns what it reported and the channel on which the lifeline brings
// the job's result (see lifeline.expect). errHostGone means nothing was
// started; another error means the attempt may have started.
func (c *hostClient) start(dir string, spec supervisorSpec) (startStatus, <-chan supervisorResult, error) {
	for try := 0; ; try++ {
		ll, err := c.connect()
		if err != nil {
			if errors.Is(err, ErrShuttingDown) {
				return startStatus{}, nil, err
			}
			return startStatus{}, nil, fmt.Errorf("start %s: %w: %w", filepath.Base(dir), errHostGone, err)
		}
		// Expected before the start is sent: the job may end before
		// its start is answered.
		ended := ll.expect(dir)
		st, err := c.ask(dir, spec)
		if err != nil || st.Error != "" {
			ll.unexpect(dir)
		}
		if errors.Is(err, errHostGone) && try == 0 {
			c.drop(ll) // it was on its way out: start another
			continue
		}
		return st, ended, err
	}
}

// ask sends one start to the host.
func (c *hostClient) ask(dir string, spec supervisorSpec) (startStatus, error) {
	conn, err := dialIn(context.Background(), c.root, hostSock)
	if err != nil {
		return startStatus{}, fmt.Errorf("start %s: %w: %w", filepath.Base(dir), errHostGone, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(launchTimeout))
	if err := json.NewEncoder(conn).Encode(supRequest{Op: opStart, Dir: dir, Spec: &spec}); err != nil {
		return startStatus{}, fmt.Errorf("start %s: %w: %w", filepath.Base(dir), errHostGone, err)
	}
	var reply hostReply
	if err := json.NewDecoder(conn).Decode(&reply); err != nil {
		return startStatus{}, fmt.Errorf("start %s: no answer from the supervisor host: %w", filepath.Base(dir), err)
	}
	if reply.Exiting {
		return startStatus{}, fmt.Errorf("start %s: %w: it is exiting", filepath.Base(dir), errHostGone)
	}
	return reply.startStatus, nil
}

// connect holds a lifeline to a running host, starting one if none runs,
// and returns it.
func (c *hostClient) connect() (*lifeline, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrShuttingDown
	}
	if c.lifeline != nil {
		if !c.lifeline.isBroken() {
			return c.lifeline, nil
		}
		// The host cut it, or is gone: hold a new one.
		c.lifeline.close()
		c.lifeline = nil
	}
	conn, err := c.holdLifeline()
	if err != nil {
		if err := c.spawn(); err != nil {
			return nil, err
		}
		if conn, err = c.holdLifeline(); err != nil {
			return nil, fmt.Errorf("reach supervisor host: %w", err)
		}
	}
	c.lifeline = newLifeline(conn, c.log)
	return c.lifeline, nil
}

// holdLifeline opens a lifeline to the host.
func (c *hostClient) holdLifeline() (net.Conn, error) {
	conn, err := dialIn(context.Background(), c.root, hostSock)
	if err != nil {
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
	if err := json.NewEncoder(conn).Encode(supRequest{Op: opLifeline}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("reach supervisor host: %w", err)
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// spawn starts a host: this binary again (/proc/self/exe), in a session of
// its own, and waits until it listens. The goroutine that reaps it
// outlives the stub, as the host does.
func (c *hostClient) spawn() error {
	if err := os.MkdirAll(c.root, 0o700); err != nil {
		return fmt.Errorf("start supervisor host: %w", err)
	}
	proc, pr, reaped, err := reexec(filepath.Join(c.root, hostLog), c.root, hostEnv+"="+c.root, "--host", c.root)
	if err != nil {
		return fmt.Errorf("start supervisor host: %w", err)
	}
	defer pr.Close()
	c.spawned = append(c.spawned, reaped)
	_ = pr.SetReadDeadline(time.Now().Add(launchTimeout))
	var ready startStatus
	if err := json.NewDecoder(pr).Decode(&ready); err != nil {
		_ = proc.Kill()
		return fmt.Errorf("start supervisor host: no report (see %s): %w", filepath.Join(c.root, hostLog), err)
	}
	c.log.Info("supervisor host started", "pid", ready.PID)
	return nil
}

// drop forgets ll, a lifeline to a host that no longer takes starts,
// unless another start has replaced it already.
func (c *hostClient) drop(ll *lifeline) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lifeline != nil && c.lifeline == ll {
		c.lifeline.close()
		c.lifeline = nil
	}
}

// close lets go of the host: it exits once its jobs have ended.
func (c *hostClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.lifeline != nil {
		c.lifeline.close()
		c.lifeline = nil
	}
}

// hostsReaped returns channels closed once the hosts this client started
// have exited and been reaped.
func (c *hostClient) hostsReaped() []<-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spawned)
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
