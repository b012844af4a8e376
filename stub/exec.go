package stub

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"golang.org/x/sys/unix"
)

const (
	// execFailedCode is the exit code reported when the binary could not
	// be started, as a shell reports a command it cannot run.
	execFailedCode = 127
	// lostExitCode is the exit code reported with a lost attempt: unknown,
	// as os.ProcessState.ExitCode says.
	lostExitCode = -1
	// lostError is the Error of an attempt whose supervisor is gone
	// without a result.
	lostError = "lost: supervisor gone"
	// launchTimeout bounds how long a new supervisor may take to report
	// that its job runs.
	launchTimeout = 30 * time.Second
	// maxWatchBackoff bounds the pause between two looks at a supervisor
	// that does not answer.
	maxWatchBackoff = 2 * time.Second
)

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

// parseAttemptName parses the name k.String() gives.
func parseAttemptName(name string) (attemptKey, bool) {
	var k attemptKey
	var rest string
	n, _ := fmt.Sscanf(name, "%d.%d.%d%s", &k.JobID, &k.Instance, &k.Attempt, &rest)
	return k, n == 3 && k.String() == name
}

// errStartFailed answers a repeated Start that came while the first
// Start of the same attempt was failing.
var errStartFailed = errors.New("an earlier Start of it failed; send it again")

// attempt is the stub's view of one attempt.
type attempt struct {
	ready chan struct{} // closed once Start has decided what happened
	// The fields below are guarded by runner.mu and final once ready is
	// closed, except exited and reason.
	rec         attemptRecord // what the outbox keeps
	dir         string        // supervisor directory
	restartable bool          // the job has a restart policy
	supervised  bool          // a supervisor runs it (false when the exec failed)
	pgid        int           // the job's process group, its first pid; 0 when not supervised
	exited      bool          // its CHILD_TERM is recorded
	// ended brings the attempt's result when its launcher pushes it (a
	// simulated supervisor, or the host over the stub's lifeline); it is
	// closed without one when the push cannot come any more, and nil for
	// an attempt whose end the stub asks its supervisor for.
	ended <-chan supervisorResult
	// reason is why the stub ended it (its lease ran out), "" if it did
	// not; a limit's reason, which the supervisor reports, comes first.
	reason string
}

// running reports whether a supervisor runs a and its end is not recorded
// yet. The caller holds runner.mu.
func (a *attempt) running() bool { return a.supervised && !a.exited }

// runner starts attempts, each under a supervisor process, and reports
// their ends. It is safe for concurrent use.
type runner struct {
	machine string
	execDir string
	dataDir string // supervisor directories live in dataDir/attempts
	cgroups string // directory of the jobs' cgroups; "" = process groups
	out     *outbox
	log     *slog.Logger
	host    *hostClient // the supervisor host the attempts run in
	// execKits and supKits are exec and supervisor directories made
	// ahead of the Starts that rename them into place.
	execKits, supKits *dirKits
	// sim is nil unless the stub simulates its jobs (simulate.go).
	sim *simulator

	ctx      context.Context // canceled by close
	cancel   context.CancelFunc
	watchers sync.WaitGroup // one watch goroutine per running attempt

	mu       sync.Mutex // guards attempts, closed and the attempt fields
	attempts map[attemptKey]*attempt
	closed   bool
}

// newRunner returns a runner with no attempts; recover adds those of an
// earlier stub on the same DataDir.
func newRunner(machine, execDir, dataDir, cgroups string, out *outbox, log *slog.Logger) *runner {
	ctx, cancel := context.WithCancel(context.Background())
	return &runner{
		machine:  machine,
		execDir:  execDir,
		dataDir:  dataDir,
		cgroups:  cgroups,
		out:      out,
		log:      log,
		host:     &hostClient{root: filepath.Join(dataDir, attemptsDir), log: log},
		execKits: &dirKits{root: execDir, files: []string{"stdout", "stderr"}},
		supKits:  &dirKits{root: filepath.Join(dataDir, attemptsDir)},
		ctx:      ctx,
		cancel:   cancel,
		attempts: make(map[attemptKey]*attempt),
	}
}

// supDir is the supervisor directory of attempt k.
func (r *runner) supDir(k attemptKey) string {
	return filepath.Join(r.dataDir, attemptsDir, k.String())
}

// start starts an attempt unless it is known, and returns whether it
// started it now. A failed exec is no error: it is recorded as a
// CHILD_TERM. start returns once the attempt's first event is durable.
//
// With answerRegister the attempt's CHILD_REGISTER is returned for the
// answer instead of being recorded in the outbox: the attempt record
// alone makes the start durable, and says so (RegisterAnswered) so that
// the CHILD_TERM goes with a REGISTER before it. A repeated Start of an
// attempt a supervisor runs or ran gets the REGISTER again.
func (r *runner) start(req client.StartRequest, answerRegister bool) (bool, *client.ChildEvent, error) {
	k := attemptKey{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false, nil, ErrShuttingDown
	}
	if a, ok := r.attempts[k]; ok {
		r.mu.Unlock()
		if !answerRegister {
			return false, nil, nil
		}
		reg, err := r.registerOf(k, a)
		return false, reg, err
	}
	a := &attempt{ready: make(chan struct{}), dir: r.supDir(k), restartable: req.Restartable}
	r.attempts[k] = a
	r.mu.Unlock()
	defer close(a.ready)

	at := time.Now().UTC()
	spec, err := r.spec(k, req)
	if err != nil {
		started, err := r.recordExecFailure(k, a, at, err)
		return started, nil, err
	}
	st, ended, awaitEnd, err := r.launch(a.dir, spec)
	if err != nil {
		_ = os.RemoveAll(a.dir)
		r.forget(k)
		return false, nil, err
	}
	if st.Error != "" {
		started, err := r.recordExecFailure(k, a, at, errors.New(st.Error))
		return started, nil, err
	}
	rec := attemptRecord{PID: st.PID, At: at, Restartable: req.Restartable, RegisterAnswered: answerRegister}
	reg := r.register(k, rec)
	var evs []client.ChildEvent
	if !answerRegister {
		evs = append(evs, reg)
	}
	if err := r.out.record(k, &rec, evs...); err != nil {
		// Not durable, so not started: undo, and let the caller retry.
		if err := r.signalDir(context.Background(), a.dir, unix.SIGKILL, 0); err != nil {
			r.log.Error("undo attempt", "attempt", k, "err", err)
		}
		awaitEnd()
		_ = os.RemoveAll(a.dir)
		r.forget(k)
		return false, nil, err
	}
	r.mu.Lock()
	a.rec, a.supervised, a.pgid, a.ended = rec, true, st.PID, ended
	r.mu.Unlock()
	r.log.Info("attempt started", "attempt", k, "binary", req.Binary, "pid", st.PID)
	r.watch(k, a)
	if !answerRegister {
		return true, nil, nil
	}
	return true, &reg, nil
}

// registerOf returns the CHILD_REGISTER of attempt a, known already, once
// its first Start has decided what happened; nil when no supervisor ran it
// (its exec failed). Should that first Start have failed, so that nothing
// runs and the attempt is forgotten, it fails too: the server sends the
// Start again, and that one starts the attempt.
func (r *runner) registerOf(k attemptKey, a *attempt) (*client.ChildEvent, error) {
	select {
	case <-a.ready:
	case <-r.ctx.Done():
		return nil, ErrShuttingDown
	}
	r.mu.Lock()
	rec, kept := a.rec, r.attempts[k] == a
	r.mu.Unlock()
	if !kept {
		return nil, fmt.Errorf("start attempt %s: %w", k, errStartFailed)
	}
	if rec.PID == 0 {
		return nil, nil
	}
	reg := r.register(k, rec)
	return &reg, nil
}

// recordExecFailure records that attempt k could not be started.
func (r *runner) recordExecFailure(k attemptKey, a *attempt, at time.Time, cause error) (bool, error) {
	r.log.Warn("attempt failed to start", "attempt", k, "err", cause)
	ev := r.event(k, client.ChildTerm, at)
	ev.ExitCode = execFailedCode
	ev.Error = cause.Error()
	rec := attemptRecord{At: at, Ended: true}
	if err := r.out.record(k, &rec, ev); err != nil {
		r.forget(k)
		return false, err
	}
	r.mu.Lock()
	a.rec = rec
	r.mu.Unlock()
	return true, nil
}

// launch has the stub's supervisor host start spec in directory dir.
// It returns what the host reported once the job runs or failed to
// start, the channel that brings the job's result if the host will push
// it (nil if it will not), and a function that waits until the attempt's
// supervisor is done with it.
//
// Should no host start or take it, the attempt gets a supervisor process
// of its own (`netmgr supervise --dir`, see reexec), which reads the spec
// from the directory.
//
// A simulated stub starts a simulated supervisor instead (Simulation).
func (r *runner) launch(dir string, spec supervisorSpec) (startStatus, <-chan supervisorResult, func(), error) {
	if r.sim != nil {
		st, ended, gone, err := r.sim.launch(dir, spec)
		return st, ended, func() { <-gone }, err
	}
	var st startStatus
	if !r.supKits.take(dir) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return st, nil, nil, fmt.Errorf("make supervisor dir: %w", err)
		}
	}
	st, ended, err := r.host.start(dir, spec)
	switch {
	case err == nil:
		return st, ended, func() { r.awaitEnd(dir) }, nil
	case errors.Is(err, ErrShuttingDown):
		return st, nil, nil, err
	case !errors.Is(err, errHostGone):
		// It may have started the job and died before answering.
		killLeftovers(dir, r.log)
		return st, nil, nil, err
	}
	r.log.Warn("no supervisor host; the attempt gets a supervisor of its own", "attempt", filepath.Base(dir), "err", err)
	if err := replaceJSONFile(filepath.Join(dir, specFile), spec); err != nil {
		return st, nil, nil, err
	}
	proc, pr, reaped, err := reexec(filepath.Join(dir, logFile), dir, supervisorEnv+"="+dir, "--dir", dir)
	if err != nil {
		return st, nil, nil, fmt.Errorf("launch supervisor: %w", err)
	}
	st, err = r.awaitStart(dir, pr, proc, reaped)
	return st, nil, func() { <-reaped }, err
}

// awaitEnd waits, for at most launchTimeout, until the attempt of dir has
// its result, or its supervisor is gone.
func (r *runner) awaitEnd(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
	defer cancel()
	if _, err := askSupervisor(ctx, dir, supRequest{Op: opWait}); err != nil {
		r.log.Warn("wait for the attempt's end", "attempt", filepath.Base(dir), "err", err)
	}
}

// awaitStart reads what the supervisor proc of directory dir reports on
// its status pipe once its job runs or failed to start; reaped is closed
// once the supervisor is reaped.
func (r *runner) awaitStart(dir string, status *os.File, proc *os.Process, reaped <-chan struct{}) (startStatus, error) {
	var st startStatus
	_ = status.SetReadDeadline(time.Now().Add(launchTimeout))
	err := json.NewDecoder(status).Decode(&st)
	_ = status.Close()
	if err != nil {
		// It died or hangs before reporting: make sure nothing of it runs.
		_ = proc.Kill()
		<-reaped
		killLeftovers(dir, r.log)
		return st, fmt.Errorf("launch supervisor: no report (see %s): %w", filepath.Join(dir, logFile), err)
	}
	return st, nil
}

// signal asks the attempt's supervisor to send sig to its job and, when
// grace is positive, SIGKILL after grace if the job is still alive. It
// waits for a Start of the same attempt in progress. An attempt that has
// ended, or never started, is signalled no more: that is no error.
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
	running, dir := a.running(), a.dir
	r.mu.Unlock()
	if !running {
		return nil
	}
	if err := r.signalDir(ctx, dir, sig, grace); err != nil {
		if _, rerr := readResult(dir); rerr == nil {
			return nil // it ended meanwhile
		}
		return fmt.Errorf("signal attempt %s: %w", k, err)
	}
	r.log.Info("attempt signalled", "attempt", k, "signal", signalName(sig), "grace", grace)
	return nil
}

// watch starts the goroutine that waits for the end of a running attempt
// and records it.
func (r *runner) watch(k attemptKey, a *attempt) {
	r.watchers.Go(func() { r.watchAttempt(k, a) })
}

// watchAttempt waits for the result its launcher pushes, if it pushes
// one, or else asks the attempt's supervisor for it, which it answers
// once the job has ended, and records the CHILD_TERM. A supervisor that
// does not answer is looked at again, backing off, until its result file
// appears or it is certainly gone (its identity no longer verifies): then
// the attempt is lost. It returns early when the runner closes: a later
// stub on the same DataDir takes over.
func (r *runner) watchAttempt(k attemptKey, a *attempt) {
	if a.ended != nil {
		select {
		case res, ok := <-a.ended:
			if ok {
				r.finish(k, a, res)
				return
			}
			// The push cannot come: ask, as for any other attempt.
		case <-r.ctx.Done():
			return
		}
	}
	backoff := 50 * time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		resp, err := askSupervisor(r.ctx, a.dir, supRequest{Op: opWait})
		if err == nil && resp.Result != nil {
			r.finish(k, a, *resp.Result)
			return
		}
		if r.ctx.Err() != nil {
			return
		}
		if res, err := readResult(a.dir); err == nil {
			r.finish(k, a, res)
			return
		}
		if err := supervisorAlive(a.dir); err != nil {
			// It may have written its result just before it went.
			if res, rerr := readResult(a.dir); rerr == nil {
				r.finish(k, a, res)
			} else {
				r.lost(k, a, err)
			}
			return
		}
		t.Reset(backoff)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			return
		}
		backoff = min(2*backoff, maxWatchBackoff)
	}
}

// signalDir asks the supervisor of directory dir to send sig to its job,
// as signalSupervised does; a simulated stub signals its simulated job.
func (r *runner) signalDir(ctx context.Context, dir string, sig unix.Signal, grace time.Duration) error {
	if r.sim != nil {
		return r.sim.signal(dir, sig, grace)
	}
	return signalSupervised(ctx, dir, sig, grace)
}

// supervisorAlive returns nil when the supervisor recorded in dir's state
// file still runs.
func supervisorAlive(dir string) error {
	var st supervisorState
	if err := readJSONFile(filepath.Join(dir, stateFile), &st); err != nil {
		return err
	}
	return st.Supervisor.verify()
}

// finish records the CHILD_TERM of an attempt whose supervisor reported
// res.
func (r *runner) finish(k attemptKey, a *attempt, res supervisorResult) {
	ev := r.event(k, client.ChildTerm, res.EndedAt)
	ev.ExitCode, ev.Signal, ev.Error, ev.Reason = res.ExitCode, res.Signal, res.Error, res.Reason
	ev.UserMS, ev.SysMS, ev.MaxRSSKB = res.UserMS, res.SysMS, res.MaxRSSKB
	if len(res.Leftovers) > 0 {
		r.log.Info("the attempt's leftover processes were killed", "attempt", k, "processes", res.Leftovers)
		ev.Leftovers = wireLeftovers(res.Leftovers)
	}
	r.log.Info("attempt ended", "attempt", k, "exit_code", ev.ExitCode, "signal", ev.Signal, "reason", ev.Reason)
	r.recordEnd(k, a, ev)
}

// lost records the CHILD_TERM of an attempt whose supervisor is gone
// without a result, after killing what may be left of its job.
func (r *runner) lost(k attemptKey, a *attempt, why error) {
	r.log.Warn("attempt lost: its supervisor is gone without a result", "attempt", k, "why", why)
	left := killLeftovers(a.dir, r.log)
	ev := r.event(k, client.ChildTerm, time.Now().UTC())
	ev.ExitCode, ev.Error = lostExitCode, lostError
	ev.Leftovers = wireLeftovers(left)
	r.recordEnd(k, a, ev)
}

// recordEnd records ev, the attempt's CHILD_TERM, with the attempt marked
// ended in the same transaction, so that no later stub reports it again.
func (r *runner) recordEnd(k attemptKey, a *attempt, ev client.ChildEvent) {
	r.mu.Lock()
	rec := a.rec
	if ev.Reason == "" {
		ev.Reason = a.reason
	}
	r.mu.Unlock()
	rec.Ended = true
	evs := []client.ChildEvent{ev}
	if rec.RegisterAnswered && rec.PID != 0 {
		// The REGISTER went only in the answer to a Start, which no
		// server may have committed: it goes again, before the TERM.
		evs = []client.ChildEvent{r.register(k, rec), ev}
	}
	if err := r.out.record(k, &rec, evs...); err != nil {
		// A later stub on this DataDir finds the result and records it.
		r.log.Error("CHILD_TERM not recorded", "attempt", k, "err", err)
		return
	}
	r.mu.Lock()
	a.rec, a.exited = rec, true
	r.mu.Unlock()
}

// killLeftovers SIGKILLs what may be left of the job of supervisor
// directory dir after its supervisor died: its cgroup's processes, or its
// process group once its first process proves to be the one recorded. A
// pid that does not verify is never signalled. It returns the processes
// it killed where it can name them: those of the cgroup, or the group's
// first process.
func killLeftovers(dir string, log *slog.Logger) []leftover {
	var st supervisorState
	if err := readJSONFile(filepath.Join(dir, stateFile), &st); err != nil {
		return nil
	}
	if st.Cgroup != "" {
		cg := &jobCgroup{dir: st.Cgroup}
		var killed []leftover
		if pids, err := cg.procs(); err == nil && len(pids) > 0 {
			log.Warn("killing the processes left in a lost attempt's cgroup", "cgroup", st.Cgroup, "pids", pids)
			for _, pid := range pids {
				killed = append(killed, leftover{PID: pid, Comm: procComm(pid)})
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
	killed := []leftover{{PID: st.Job.PID, Comm: procComm(st.Job.PID)}}
	_ = unix.Kill(-st.Job.PID, unix.SIGKILL)
	_ = unix.Kill(-st.Job.PID, unix.SIGCONT)
	return killed
}

// wireLeftovers converts killed leftover processes for a CHILD_TERM.
func wireLeftovers(ls []leftover) []client.Leftover {
	if len(ls) == 0 {
		return nil
	}
	out := make([]client.Leftover, len(ls))
	for i, l := range ls {
		out[i] = client.Leftover{PID: l.PID, Comm: l.Comm}
	}
	return out
}

// forget drops an attempt whose start was undone.
func (r *runner) forget(k attemptKey) {
	r.mu.Lock()
	delete(r.attempts, k)
	r.mu.Unlock()
}

// close makes the runner refuse new attempts and stops its watch
// goroutines; running jobs and their supervisors are left alone.
func (r *runner) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.host.close()
	r.execKits.close()
	r.supKits.close()
	r.cancel()
}

// wait waits for the watch goroutines, which end at close.
func (r *runner) wait() { r.watchers.Wait() }

// event returns an event of kind for attempt k.
// register returns the CHILD_REGISTER of attempt k as rec records it.
func (r *runner) register(k attemptKey, rec attemptRecord) client.ChildEvent {
	ev := r.event(k, client.ChildRegister, rec.At)
	ev.PID = rec.PID
	return ev
}

func (r *runner) event(k attemptKey, kind string, at time.Time) client.ChildEvent {
	return client.ChildEvent{
		Kind: kind, JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
		Machine: r.machine, At: at,
	}
}
