package supervisor

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
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// launchTimeout bounds how long a new supervisor may take to report that
// its job runs.
const launchTimeout = 30 * time.Second

// Client is the stub's connection to its supervisor host: it finds the
// host running on the stub's attempts directory or starts one, holds a
// lifeline to it while the stub runs, on which the host pushes the
// results of the jobs that end, and asks it to start attempts. It also
// reaches the supervisor of any attempt by the attempt's directory, be it
// the host's or the supervisor process of one attempt. It is safe for
// concurrent use.
type Client struct {
	root    string                // the attempts directory, absolute
	makeDir func(dir string) bool // makes an attempt's directory, if it can
	log     *slog.Logger

	mu       sync.Mutex // guards lifeline, closed and spawned; held while a host starts
	lifeline *lifeline
	closed   bool
	spawned  []<-chan struct{} // per host this client started: closed once it is reaped
}

// NewClient returns a client of the supervisor host of root, the stub's
// attempts directory (absolute); it starts the host when a Start first
// needs it. makeDir, when not nil, makes an attempt's directory (the stub
// makes them ahead) and reports whether it did; Start makes those it did
// not.
func NewClient(root string, makeDir func(dir string) bool, log *slog.Logger) *Client {
	return &Client{root: root, makeDir: makeDir, log: log}
}

// Start has the supervisor host start spec as the attempt of directory
// dir, a directory of root named for the attempt, and returns once the job
// runs or failed to start (Started.Error). It blocks while a host starts.
//
// Should no host start or take it, the attempt gets a supervisor process
// of its own (`netmgr supervise --dir`, see RunAttempt), which reads the
// spec from the directory. An error means no job runs; ErrClosed, that
// Close was called.
func (c *Client) Start(dir string, spec Spec) (Started, error) {
	if c.makeDir == nil || !c.makeDir(dir) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return Started{}, fmt.Errorf("%w: make supervisor dir: %w", ErrFiles, err)
		}
	}
	st, ended, err := c.startInHost(dir, spec)
	switch {
	case err == nil:
		return Started{PID: st.PID, Error: st.Error, Fault: st.Fault, Stdio: st.Stdio, Ended: ended, Settle: func() { c.awaitEnd(dir) }}, nil
	case errors.Is(err, ErrClosed):
		return Started{}, err
	case !errors.Is(err, errHostGone):
		// It may have started the job and died before answering.
		killLeftovers(dir, c.log)
		return Started{}, err
	}
	c.log.Warn("no supervisor host; the attempt gets a supervisor of its own", "attempt", filepath.Base(dir), "err", err)
	if err := replaceJSONFile(filepath.Join(dir, specFile), spec); err != nil {
		return Started{}, fmt.Errorf("%w: %w", ErrFiles, err)
	}
	proc, pr, reaped, err := reexec(filepath.Join(dir, logFile), dir, supervisorEnv+"="+dir, "--dir", dir)
	if err != nil {
		return Started{}, fmt.Errorf("launch supervisor: %w", err)
	}
	st, err = c.awaitStart(dir, pr, proc, reaped)
	return Started{PID: st.PID, Error: st.Error, Fault: st.Fault, Stdio: st.Stdio, Settle: func() { <-reaped }}, err
}

// awaitEnd waits, for at most launchTimeout, until the attempt of dir has
// its result, or its supervisor is gone.
func (c *Client) awaitEnd(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
	defer cancel()
	if _, err := askSupervisor(ctx, dir, request{Op: opWait}); err != nil {
		c.log.Warn("wait for the attempt's end", "attempt", filepath.Base(dir), "err", err)
	}
}

// awaitStart reads what the supervisor proc of directory dir reports on
// its status pipe once its job runs or failed to start; reaped is closed
// once the supervisor is reaped.
func (c *Client) awaitStart(dir string, status *os.File, proc *os.Process, reaped <-chan struct{}) (startStatus, error) {
	var st startStatus
	_ = status.SetReadDeadline(time.Now().Add(launchTimeout))
	err := json.NewDecoder(status).Decode(&st)
	_ = status.Close()
	if err != nil {
		// It died or hangs before reporting: make sure nothing of it runs.
		_ = proc.Kill()
		<-reaped
		killLeftovers(dir, c.log)
		return st, fmt.Errorf("launch supervisor: no report (see %s): %w", filepath.Join(dir, logFile), err)
	}
	return st, nil
}

// Signal asks the supervisor of dir to send sig to its job and, when
// grace is positive, SIGKILL after grace if the job is still alive. It
// blocks for the supervisor's answer.
func (c *Client) Signal(ctx context.Context, dir string, sig unix.Signal, grace time.Duration) error {
	resp, err := askSupervisor(ctx, dir, request{Op: opSignal, Signal: int(sig), GraceMS: grace.Milliseconds()})
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}

// Wait asks the supervisor of dir for the job's result, which it answers
// once the job has ended: Wait blocks until then or until ctx ends.
func (c *Client) Wait(ctx context.Context, dir string) (Result, error) {
	resp, err := askSupervisor(ctx, dir, request{Op: opWait})
	switch {
	case err != nil:
		return Result{}, err
	case resp.Result == nil:
		return Result{}, fmt.Errorf("wait for the attempt of %s: %s", filepath.Base(dir), resp.Error)
	}
	return *resp.Result, nil
}

// Outcome tells what dir holds without asking its supervisor (see
// outcome). It does not block.
func (c *Client) Outcome(dir string) (Result, error) { return outcome(dir) }

// KillLeftovers kills what may be left of the job of dir after its
// supervisor died (see killLeftovers) and returns what it killed.
func (c *Client) KillLeftovers(dir string) []Leftover { return killLeftovers(dir, c.log) }

// startInHost asks the host to start spec as the attempt of directory
// dir, and returns what it reported and the channel on which the lifeline
// brings the job's result (see lifeline.expect). errHostGone means nothing
// was started; another error means the attempt may have started.
func (c *Client) startInHost(dir string, spec Spec) (startStatus, <-chan Result, error) {
	for try := 0; ; try++ {
		ll, err := c.connect()
		if err != nil {
			if errors.Is(err, ErrClosed) {
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
func (c *Client) ask(dir string, spec Spec) (startStatus, error) {
	conn, err := dialIn(context.Background(), c.root, hostSock)
	if err != nil {
		return startStatus{}, fmt.Errorf("start %s: %w: %w", filepath.Base(dir), errHostGone, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(launchTimeout))
	if err := json.NewEncoder(conn).Encode(request{Op: opStart, Dir: dir, Spec: &spec}); err != nil {
		return startStatus{}, fmt.Errorf("start %s: %w: %w", filepath.Base(dir), errHostGone, err)
	}
	var reply hostReply
	if err := json.NewDecoder(conn).Decode(&reply); err != nil {
		if errors.Is(err, syscall.ECONNRESET) {
			// Reset with the request unread: the connection was still
			// in the backlog of a host that closed its listener to
			// exit (its last job had just ended). It started nothing.
			return startStatus{}, fmt.Errorf("start %s: %w: %w", filepath.Base(dir), errHostGone, err)
		}
		return startStatus{}, fmt.Errorf("start %s: no answer from the supervisor host: %w", filepath.Base(dir), err)
	}
	if reply.Exiting {
		return startStatus{}, fmt.Errorf("start %s: %w: it is exiting", filepath.Base(dir), errHostGone)
	}
	return reply.startStatus, nil
}

// connect holds a lifeline to a running host, starting one if none runs,
// and returns it.
func (c *Client) connect() (*lifeline, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
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
func (c *Client) holdLifeline() (net.Conn, error) {
	conn, err := dialIn(context.Background(), c.root, hostSock)
	if err != nil {
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
	if err := json.NewEncoder(conn).Encode(request{Op: opLifeline}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("reach supervisor host: %w", err)
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// spawn starts a host: this binary again (/proc/self/exe), in a session of
// its own, and waits until it listens. The goroutine that reaps it
// outlives the stub, as the host does.
func (c *Client) spawn() error {
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
func (c *Client) drop(ll *lifeline) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lifeline != nil && c.lifeline == ll {
		c.lifeline.close()
		c.lifeline = nil
	}
}

// Close lets go of the host, which exits once its jobs have ended, and
// makes later Starts fail with ErrClosed. Running jobs and their
// supervisors are left alone.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.lifeline != nil {
		c.lifeline.close()
		c.lifeline = nil
	}
}

// HostsReaped returns channels closed once the hosts this client started
// have exited and been reaped (tests wait for them). It does not block.
func (c *Client) HostsReaped() []<-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spawned)
}

// killLeftovers SIGKILLs what may be left of the job of supervisor
// directory dir after its supervisor died: its cgroup's processes, or its
// process group once its first process proves to be the one recorded. A
// pid that does not verify is never signalled. It returns the processes
// it killed where it can name them: those of the cgroup, or the group's
// first process.
func killLeftovers(dir string, log *slog.Logger) []Leftover {
	var st attemptState
	if err := readJSONFile(filepath.Join(dir, stateFile), &st); err != nil {
		return nil
	}
	v1 := &jobCgroupsV1{dirs: st.CgroupsV1}
	// The killed processes leave once reaped (by init or a subreaper):
	// waited for a little, and a directory left is harmless.
	defer func() { _ = v1.removeBy(time.Now().Add(time.Second)) }()
	if st.Cgroup == "" && len(st.CgroupsV1) > 0 {
		st.Cgroup = st.CgroupsV1[0] // a v1 cgroup holds the job's processes as well
	}
	if st.Cgroup != "" {
		cg := &jobCgroup{dir: st.Cgroup}
		var killed []Leftover
		if pids, err := cg.procs(); err == nil && len(pids) > 0 {
			log.Warn("killing the processes left in a lost attempt's cgroup", "cgroup", st.Cgroup, "pids", pids)
			for _, pid := range pids {
				killed = append(killed, Leftover{PID: pid, Comm: procComm(pid)})
			}
			_ = cg.signal(unix.SIGKILL)
		}
		_ = cg.remove() // fails while the killed processes linger; harmless
		return killed
	}
	if err := st.Job.verify(); err != nil {
		return nil
	}
	log.Warn("killing the process group of a lost attempt", "pgid", st.Job.PID)
	killed := []Leftover{{PID: st.Job.PID, Comm: procComm(st.Job.PID)}}
	_ = unix.Kill(-st.Job.PID, unix.SIGKILL)
	_ = unix.Kill(-st.Job.PID, unix.SIGCONT)
	return killed
}
