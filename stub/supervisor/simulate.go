package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A Simulator stands in for the supervisor host in a stub that simulates
// its jobs (stub.Simulation): it runs simulated supervisors in the stub's
// process, in the same supervisor directories, which push each job's end
// to the stub as the host does on its lifeline and take signals by a call
// instead of on a socket. The job a simulated supervisor pretends to run
// gets a fake but unique pid (above the kernel's largest pid, so it names
// no process), runs for the run time and exits 0. A signal ends it at
// once with the signal's exit status (128+signal), as the default
// disposition would: STOP, TSTP, TTIN and TTOU pause it and CONT resumes
// it (time stopped does not count towards the run time), CHLD, URG and
// WINCH are ignored; a grace SIGKILLs it later as the real supervisor
// does. A run limit ends it with SIGTERM and its reason; memory limits
// and the lease are not simulated. The binary must exist and be
// executable, or the attempt fails as an exec would.
//
// A simulated supervisor leaves result.json but no state.json, so a stub
// restarted on the same DataDir finds the results of the attempts that
// had ended and finds those still running lost: there is no process to
// reattach to. Simulated supervisors outlive their stub's Shutdown as
// real ones do, until their job ends. A Simulator is safe for concurrent
// use.
type Simulator struct {
	runTime time.Duration
	log     *slog.Logger
	pids    atomic.Int64 // simulated pids handed out so far

	mu   sync.Mutex         // guards jobs
	jobs map[string]*simJob // by supervisor directory, until their result is written
}

// simPIDBase is above PID_MAX_LIMIT (2^22), the largest pid Linux hands
// out, so that a simulated pid never names a process.
const simPIDBase = 1 << 22

// NewSimulator returns a Simulator whose jobs run for runTime, logging
// to log.
func NewSimulator(runTime time.Duration, log *slog.Logger) *Simulator {
	return &Simulator{runTime: runTime, log: log}
}

// Start stands in for Client.Start: it checks that the binary could be
// executed, then starts a simulated supervisor in dir. Started.Ended
// brings the job's result once it has ended; Started.Settle waits until
// that supervisor is gone. It does not block.
func (m *Simulator) Start(dir string, spec Spec) (Started, error) {
	gone := make(chan struct{})
	if err := executable(spec.Path); err != nil {
		close(gone)
		return Started{Error: err.Error(), Settle: func() { <-gone }}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Started{}, fmt.Errorf("make supervisor dir: %w", err)
	}
	j := &simJob{
		dir:    dir,
		log:    m.log.With("attempt", spec.Key),
		left:   m.runTime,
		ended:  make(chan struct{}),
		result: make(chan Result, 1),
		gone:   gone,
		resume: time.Now(),
	}
	m.mu.Lock()
	if m.jobs == nil {
		m.jobs = make(map[string]*simJob)
	}
	m.jobs[dir] = j
	m.mu.Unlock()
	j.mu.Lock()
	j.armLocked()
	if run := spec.limits().run; run > 0 {
		j.timers = append(j.timers, time.AfterFunc(run, func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.endLocked(signalled(unix.SIGTERM, runLimitReason(run)))
		}))
	}
	j.mu.Unlock()
	// The simulated supervisor's goroutine stands in for a process that
	// outlives the stub: gone is how its launcher waits for it.
	go func() {
		j.finish()
		m.mu.Lock()
		delete(m.jobs, dir)
		m.mu.Unlock()
		close(gone)
	}()
	pid := simPIDBase + int(m.pids.Add(1))
	return Started{PID: pid, Ended: j.result, Settle: func() { <-gone }}, nil
}

// Signal sends sig to the simulated job of supervisor directory dir, as
// Client.Signal asks a real supervisor to. It does not block.
func (m *Simulator) Signal(_ context.Context, dir string, sig unix.Signal, grace time.Duration) error {
	j := m.job(dir)
	if j == nil {
		return fmt.Errorf("signal simulated job of %s: %w", filepath.Base(dir), errNoAttempt)
	}
	j.signal(sig, grace)
	return nil
}

// Wait returns the result of the simulated job of dir once it has ended,
// as Client.Wait does; it blocks until then or until ctx ends.
func (m *Simulator) Wait(ctx context.Context, dir string) (Result, error) {
	j := m.job(dir)
	if j == nil {
		return Result{}, fmt.Errorf("wait for simulated job of %s: %w", filepath.Base(dir), errNoAttempt)
	}
	select {
	case <-j.ended:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.res, nil
}

// Outcome tells what dir holds, as Client.Outcome does: the result a
// simulated supervisor wrote, or, there being no state.json, that the
// attempt is lost.
func (m *Simulator) Outcome(dir string) (Result, error) { return outcome(dir) }

// KillLeftovers kills nothing: a simulated job leaves no process.
func (m *Simulator) KillLeftovers(string) []Leftover { return nil }

// Close does nothing: simulated supervisors outlive their stub, as real
// ones do.
func (m *Simulator) Close() {}

// job returns the simulated job of dir, nil once its result is written.
func (m *Simulator) job(dir string) *simJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[dir]
}

// executable returns the error exec would give for path: none when it is
// an executable regular file.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("exec %s: %w", path, unix.EACCES)
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// simJob is a simulated supervisor and the job it pretends to run.
type simJob struct {
	dir    string
	log    *slog.Logger
	ended  chan struct{} // closed once res is set
	result chan Result   // brings res once result.json is written
	gone   chan struct{} // closed once the simulated supervisor is done

	mu     sync.Mutex // guards the fields below
	left   time.Duration
	resume time.Time     // when it last started or continued; zero while stopped
	gen    int           // counts arms, so a stale natural end does nothing
	timers []*time.Timer // the natural end, the run limit, grace kills
	over   bool          // res is set
	res    Result
}

// signalled is the result of a job ended by sig, with reason.
func signalled(sig unix.Signal, reason string) Result {
	return Result{ExitCode: 128 + int(sig), Signal: signalName(sig), Reason: reason}
}

// armLocked schedules the natural end after the run time left. The caller
// holds j.mu.
func (j *simJob) armLocked() {
	j.gen++
	gen := j.gen
	j.timers = append(j.timers, time.AfterFunc(j.left, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if gen == j.gen && !j.resume.IsZero() {
			j.endLocked(Result{})
		}
	}))
}

// endLocked ends the job with res unless it has ended. The caller holds
// j.mu.
func (j *simJob) endLocked(res Result) {
	if j.over {
		return
	}
	j.over = true
	for _, t := range j.timers {
		t.Stop()
	}
	res.EndedAt = time.Now().UTC()
	j.res = res
	close(j.ended)
}

// signal does to the simulated job what sig does to a process with the
// default dispositions, and SIGKILLs it after grace if grace is positive
// and it still runs. A job that has ended is not signalled any more.
func (j *simJob) signal(sig unix.Signal, grace time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.over {
		return
	}
	switch sig {
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		if !j.resume.IsZero() {
			j.left = max(j.left-time.Since(j.resume), 0)
			j.resume = time.Time{}
			j.gen++
		}
	case unix.SIGCONT, unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH:
	default:
		j.endLocked(signalled(sig, ""))
		return
	}
	if wakes(sig) || sig == unix.SIGCONT {
		// The real supervisor continues a stopped job after any signal
		// meant to wake it.
		if j.resume.IsZero() {
			j.resume = time.Now()
			j.armLocked()
		}
	}
	if grace > 0 {
		j.timers = append(j.timers, time.AfterFunc(grace, func() { j.signal(unix.SIGKILL, 0) }))
	}
	j.log.Debug("simulated job signalled", "signal", signalName(sig), "grace", grace)
}

// finish waits until the job has ended, writes result.json, as a real
// supervisor does, and hands the result to the stub.
func (j *simJob) finish() {
	<-j.ended
	j.mu.Lock()
	res := j.res
	j.mu.Unlock()
	if b, err := json.Marshal(res); err != nil {
		j.log.Error("encode simulated result", "err", err)
	} else if err := os.WriteFile(filepath.Join(j.dir, resultFile), b, 0o600); err != nil {
		// Not durable, and need not be: nothing of the simulated job
		// survives the process.
		j.log.Warn("simulated result not written", "err", err)
	}
	j.result <- res
}

// Exec refuses: a simulated job has no processes to enter.
func (s *Simulator) Exec(context.Context, string, Exec) (int, <-chan Result, error) {
	return 0, nil, errors.New("exec: a simulated job has no processes to enter")
}
