package stub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"golang.org/x/sys/unix"
)

// execFailedCode is the exit code reported when the binary could not be
// started, as a shell reports a command it cannot run.
const execFailedCode = 127

// attemptKey names one attempt of one instance of a job.
type attemptKey struct {
	JobID    uint64
	Instance int
	Attempt  uint64
}

func (k attemptKey) String() string {
	return fmt.Sprintf("%d.%d.%d", k.JobID, k.Instance, k.Attempt)
}

func (k attemptKey) bytes() []byte {
	b := binary.BigEndian.AppendUint64(nil, k.JobID)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Instance))
	return binary.BigEndian.AppendUint64(b, k.Attempt)
}

func parseAttemptKey(b []byte) (attemptKey, bool) {
	if len(b) != 24 {
		return attemptKey{}, false
	}
	return attemptKey{
		JobID:    binary.BigEndian.Uint64(b),
		Instance: int(binary.BigEndian.Uint64(b[8:])),
		Attempt:  binary.BigEndian.Uint64(b[16:]),
	}, true
}

// attempt is the stub's view of one attempt.
type attempt struct {
	ready  chan struct{} // closed once Start has decided what happened
	done   chan struct{} // closed once a supervised attempt's leader is waited for
	limits limits        // the queue limits, fixed at start
	// The fields below are guarded by runner.mu and final once ready is
	// closed, except exited, reason and peakKB.
	recovered  bool   // started by an earlier stub on the same DataDir
	supervised bool   // this stub process started it and waits for it
	pgid       int    // process group, 0 when the exec failed
	exited     bool   // the group leader has been waited for
	reason     string // why the stub ended it (a limit), "" if it did not
	peakKB     int64  // largest resident memory of the group sampled
}

// runner starts attempts and waits for them. It is safe for concurrent use.
type runner struct {
	machine string
	execDir string
	out     *outbox
	log     *slog.Logger
	stop    chan struct{}  // closed by close
	timers  sync.WaitGroup // grace-period and run-limit goroutines

	mu         sync.Mutex // guards attempts, memLimited, closed and the attempt fields
	attempts   map[attemptKey]*attempt
	memLimited map[attemptKey]*attempt // running attempts with a memory limit
	closed     bool
}

// newRunner returns a runner that treats the known attempts, started by an
// earlier stub on the same DataDir, as already started.
func newRunner(machine, execDir string, out *outbox, log *slog.Logger, known []attemptKey) *runner {
	r := &runner{
		machine:    machine,
		execDir:    execDir,
		out:        out,
		log:        log,
		stop:       make(chan struct{}),
		attempts:   make(map[attemptKey]*attempt, len(known)),
		memLimited: make(map[attemptKey]*attempt),
	}
	for _, k := range known {
		a := &attempt{ready: make(chan struct{}), recovered: true}
		close(a.ready)
		r.attempts[k] = a
	}
	return r
}

// start starts an attempt unless it is known, and returns whether it
// started it now. A failed exec is no error: it is recorded as a
// CHILD_TERM. start returns once the attempt's first event is durable.
func (r *runner) start(req client.StartRequest) (bool, error) {
	k := attemptKey{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false, ErrShuttingDown
	}
	if _, ok := r.attempts[k]; ok {
		r.mu.Unlock()
		return false, nil
	}
	a := &attempt{ready: make(chan struct{}), done: make(chan struct{}), limits: limitsOf(req)}
	r.attempts[k] = a
	r.mu.Unlock()
	defer close(a.ready)

	cmd, err := r.command(k, req)
	if err == nil {
		err = cmd.Start()
		closeFiles(cmd)
	}
	started := time.Now() // with the monotonic reading the run limit counts from
	at := started.UTC()
	if err != nil {
		r.log.Warn("attempt failed to start", "attempt", k, "binary", req.Binary, "err", err)
		ev := r.event(k, client.ChildTerm, at)
		ev.ExitCode = execFailedCode
		ev.Error = err.Error()
		if err := r.out.record(k, &attemptRecord{At: at}, ev); err != nil {
			r.forget(k)
			return false, err
		}
		return true, nil
	}

	pid := cmd.Process.Pid
	ev := r.event(k, client.ChildRegister, at)
	ev.PID = pid
	if err := r.out.record(k, &attemptRecord{PID: pid, At: at}, ev); err != nil {
		// Not durable, so not started: undo, and let the caller retry.
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = cmd.Wait()
		reapGroup(pid)
		r.forget(k)
		return false, err
	}
	r.mu.Lock()
	a.supervised, a.pgid = true, pid
	r.armLimits(k, a, started)
	r.mu.Unlock()
	r.log.Info("attempt started", "attempt", k, "binary", req.Binary, "pid", pid)
	go r.wait(k, a, cmd)
	return true, nil
}

// command prepares the attempt's process: directory, credentials,
// environment, output files.
func (r *runner) command(k attemptKey, req client.StartRequest) (*exec.Cmd, error) {
	cred, err := credential(req.Owner)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.execDir, k.String())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make exec dir: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        req.Binary,
		Args:        append([]string{req.Binary}, req.Args...),
		Dir:         dir,
		Env:         r.environ(k, req),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: cred},
	}
	if !strings.Contains(req.Binary, "/") {
		if cmd.Path, err = lookPath(req.Binary, cmd.Env); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			closeFiles(cmd)
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		if name == "stdout" {
			cmd.Stdout = f
		} else {
			cmd.Stderr = f
		}
	}
	if cred != nil {
		if err := chownAll(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			closeFiles(cmd)
			return nil, err
		}
	}
	return cmd, nil
}

// environ is the request's environment plus the NETMGR_ variables, and
// the stub's PATH when the request sets none.
func (r *runner) environ(k attemptKey, req client.StartRequest) []string {
	env := append([]string(nil), req.Env...)
	hasPath := false
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			hasPath = true
		}
	}
	if !hasPath {
		env = append(env, "PATH="+os.Getenv("PATH"))
	}
	return append(env,
		"NETMGR_JOB_ID="+strconv.FormatUint(k.JobID, 10),
		"NETMGR_JOB_NAME="+req.JobName,
		"NETMGR_INSTANCE="+strconv.Itoa(k.Instance),
		"NETMGR_ATTEMPT="+strconv.FormatUint(k.Attempt, 10),
		"NETMGR_MACHINE="+r.machine,
	)
}

// wait waits for the attempt's process, kills and reaps what is left of
// its group and records its CHILD_TERM.
func (r *runner) wait(k attemptKey, a *attempt, cmd *exec.Cmd) {
	_ = cmd.Wait() // the exit status is in cmd.ProcessState
	r.mu.Lock()
	a.exited = true
	delete(r.memLimited, k)
	reason, peakKB := a.reason, a.peakKB
	r.mu.Unlock()
	close(a.done)
	reapGroup(a.pgid)

	ev := r.event(k, client.ChildTerm, time.Now().UTC())
	ps := cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ev.Signal = signalName(ws.Signal())
		ev.ExitCode = 128 + int(ws.Signal())
	} else {
		ev.ExitCode = ps.ExitCode()
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		ev.UserMS = ru.Utime.Sec*1000 + ru.Utime.Usec/1000
		ev.SysMS = ru.Stime.Sec*1000 + ru.Stime.Usec/1000
		ev.MaxRSSKB = ru.Maxrss
	}
	ev.MaxRSSKB = max(ev.MaxRSSKB, peakKB)
	ev.Reason = reason
	r.log.Info("attempt ended", "attempt", k, "exit_code", ev.ExitCode, "signal", ev.Signal, "reason", reason)

	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		r.log.Warn("attempt ended after shutdown; its CHILD_TERM is not recorded", "attempt", k)
		return
	}
	if err := r.out.record(k, nil, ev); err != nil {
		r.log.Error("CHILD_TERM lost", "attempt", k, "err", err)
	}
}

// signal sends sig to the attempt's process group and, when grace is
// positive, SIGKILL after grace if the group is still alive. It waits for
// a Start of the same attempt in progress.
func (r *runner) signal(ctx context.Context, k attemptKey, sig unix.Signal, grace time.Duration) error {
	r.mu.Lock()
	a, ok := r.attempts[k]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("signal attempt %s: %w", k, ErrUnknownAttempt)
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		return fmt.Errorf("signal attempt %s: %w", k, ctx.Err())
	}
	r.mu.Lock()
	defer r.mu.Unlock() // held across kill so the group cannot be reaped meanwhile
	switch {
	case a.recovered:
		return fmt.Errorf("signal attempt %s: started by an earlier stub process and not supervised: %w", k, ErrUnknownAttempt)
	case !a.supervised || a.exited:
		return nil // the exec failed or the job ended: nothing to signal
	}
	if err := unix.Kill(-a.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal attempt %s: %w", k, err)
	}
	if wakes(sig) {
		// A suspended (stopped) group takes the signal only once continued.
		_ = unix.Kill(-a.pgid, unix.SIGCONT)
	}
	r.log.Info("attempt signalled", "attempt", k, "signal", signalName(sig), "grace", grace)
	if grace > 0 && sig != unix.SIGKILL {
		r.timers.Go(func() { r.killAfter(k, a, grace) })
	}
	return nil
}

// wakes reports whether a signal is meant to end or interrupt the job, so
// that a stopped group must be continued to act on it. Job-control signals
// themselves (STOP, CONT, TSTP, TTIN, TTOU) do not.
func wakes(sig unix.Signal) bool {
	switch sig {
	case unix.SIGSTOP, unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return false
	}
	return true
}

// killAfter SIGKILLs the attempt's group after grace unless it ended first
// or the runner closed.
func (r *runner) killAfter(k attemptKey, a *attempt, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.stop:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.exited {
		return
	}
	if err := unix.Kill(-a.pgid, unix.SIGKILL); err == nil {
		_ = unix.Kill(-a.pgid, unix.SIGCONT)
		r.log.Info("attempt killed after grace", "attempt", k, "grace", grace)
	}
}

// forget drops an attempt whose start was undone.
func (r *runner) forget(k attemptKey) {
	r.mu.Lock()
	delete(r.attempts, k)
	r.mu.Unlock()
}

// close makes the runner refuse new attempts and stop recording events;
// running jobs are left alone.
func (r *runner) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
}

// waitTimers waits for the grace-period and run-limit goroutines, which
// end at close.
func (r *runner) waitTimers() { r.timers.Wait() }

// event returns an event of kind for attempt k.
func (r *runner) event(k attemptKey, kind string, at time.Time) client.ChildEvent {
	return client.ChildEvent{
		Kind: kind, JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
		Machine: r.machine, At: at,
	}
}

// reapGroup SIGKILLs what is left of process group pgid and reaps the
// members that are the stub's children (orphans, as the stub is a
// subreaper).
func reapGroup(pgid int) {
	_ = unix.Kill(-pgid, unix.SIGKILL)
	for {
		_, err := unix.Wait4(-pgid, nil, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: none left
		}
	}
}

// credential returns the credential to run owner's job with: nil (the
// stub's own user) unless the stub is root and owner a non-root user.
func credential(owner string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 || owner == "" {
		return nil, nil
	}
	u, err := user.Lookup(owner)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("run as %q: %w", owner, ErrUnknownOwner)
		}
		return nil, fmt.Errorf("look up owner %q: %w", owner, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("look up owner %q: uid %q: %w", owner, u.Uid, err)
	}
	if uid == 0 {
		return nil, nil
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("look up owner %q: gid %q: %w", owner, u.Gid, err)
	}
	groups := []uint32{}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				groups = append(groups, uint32(g))
			}
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, nil
}

// lookPath finds a binary named without a slash in the PATH of env.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue // never the exec dir by accident
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: %w", name, exec.ErrNotFound)
}

// chownAll gives dir and the files in it (not recursively) to uid:gid.
func chownAll(dir string, uid, gid int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("chown exec dir: %w", err)
	}
	for _, e := range entries {
		if err := os.Lchown(filepath.Join(dir, e.Name()), uid, gid); err != nil {
			return fmt.Errorf("chown exec dir: %w", err)
		}
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("chown exec dir: %w", err)
	}
	return nil
}

// closeFiles closes the stub's copies of the job's output files.
func closeFiles(cmd *exec.Cmd) {
	for _, w := range []any{cmd.Stdout, cmd.Stderr} {
		if f, ok := w.(*os.File); ok {
			_ = f.Close()
		}
	}
}

// parseSignal turns "TERM", "SIGTERM", "term" or "15" into a signal;
// empty means SIGTERM.
func parseSignal(name string) (unix.Signal, error) {
	if name == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(name); err == nil {
		if unix.SignalName(unix.Signal(n)) == "" {
			return 0, fmt.Errorf("signal %q: %w", name, ErrUnknownSignal)
		}
		return unix.Signal(n), nil
	}
	up := strings.ToUpper(name)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	sig := unix.SignalNum(up)
	if sig == 0 {
		return 0, fmt.Errorf("signal %q: %w", name, ErrUnknownSignal)
	}
	return sig, nil
}

// signalName is the signal's name without "SIG", e.g. "TERM".
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}
