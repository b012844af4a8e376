package stub

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/fsm/dblang"
	"golang.org/x/sys/unix"
)

// Simulation makes a stub simulate its jobs instead of running them, so
// that many stubs fit in one process for tests and benchmarks at scale
// (`netmgr sim`). Everything above the fork is the real stub's: the API,
// Start handling and its lease check, the exec dir, the outbox, the
// sender, the lease keeper, gossip and facts. Only the supervisor host is
// replaced by simulated supervisors in the stub's process, in the same
// supervisor directories, which push each job's end to the stub as the
// host does on its lifeline and take signals by a call instead of on a
// socket: the job a simulated supervisor pretends to run gets a fake but
// unique pid (above the kernel's largest pid, so it names no process),
// runs for RunTime and exits 0. A signal ends it at
// once with the signal's exit status (128+signal), as the default
// disposition would: STOP, TSTP, TTIN and TTOU pause it and CONT resumes
// it (time stopped does not count towards RunTime), CHLD, URG and WINCH
// are ignored; a grace SIGKILLs it later as the real supervisor does. A
// run limit (MaxRunSeconds) ends it with SIGTERM and its Reason; memory
// limits and the supervisor's own lease guard are not simulated (the
// stub's lease keeper still stops restartable jobs). The binary must
// exist and be executable, or the attempt fails as an exec would.
//
// A simulated supervisor leaves result.json but no state.json, so a stub
// restarted on the same DataDir reports the attempts that had ended and
// reports those still running as lost (exit code -1, "lost: supervisor
// gone"): there is no process to reattach to. Simulated supervisors
// outlive their stub's Shutdown as real ones do, until their job ends.
//
// A simulated stub runs no cgroups: Config.CgroupParent is set to
// NoCgroups.
type Simulation struct {
	// RunTime is how long every simulated job runs before it exits 0;
	// 0 ends it at once.
	RunTime time.Duration
	// Slots, when positive, is the machine's nprocs claim (how many
	// instances it runs at once), made as an init file makes it: the
	// init file's own nprocs is overridden, and the servers' database
	// still overrides both.
	Slots int
	// MemoryMB, when positive, is the machine's mem claim in MB, in the
	// same way.
	MemoryMB int64
}

// simPIDBase is above PID_MAX_LIMIT (2^22), the largest pid Linux hands
// out, so that a simulated pid never names a process.
const simPIDBase = 1 << 22

// simulate turns s into a simulated stub when sim is not nil: its runner
// starts simulated supervisors and its facts carry sim's claims. New calls
// it before anything runs.
func (s *Stub) simulate(sim *Simulation) {
	if sim == nil {
		return
	}
	s.runner.sim = &simulator{runTime: sim.RunTime, log: s.log}
	if sim.Slots <= 0 && sim.MemoryMB <= 0 {
		return
	}
	init := &dblang.Init{}
	if s.facts.init != nil {
		c := *s.facts.init
		init = &c
	}
	init.Attrs = maps.Clone(init.Attrs)
	if init.Attrs == nil {
		init.Attrs = make(map[string]float64)
	}
	if sim.Slots > 0 {
		init.Attrs["nprocs"] = float64(sim.Slots)
	}
	if sim.MemoryMB > 0 {
		init.Attrs["mem"] = float64(sim.MemoryMB)
	}
	s.facts.init = init
}

// simulator starts the simulated supervisors of one stub and signals
// their jobs. It is safe for concurrent use.
type simulator struct {
	runTime time.Duration
	log     *slog.Logger
	pids    atomic.Int64 // simulated pids handed out so far

	mu   sync.Mutex         // guards jobs
	jobs map[string]*simJob // by supervisor directory, until their result is written
}

// launch stands in for runner.launch: it checks that the binary could be
// executed, then starts a simulated supervisor in dir. The first channel
// it returns brings the job's result once it has ended; the second is
// closed once that supervisor is gone.
func (m *simulator) launch(dir string, spec supervisorSpec) (startStatus, <-chan supervisorResult, <-chan struct{}, error) {
	gone := make(chan struct{})
	if err := executable(spec.Path); err != nil {
		close(gone)
		return startStatus{Error: err.Error()}, nil, gone, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return startStatus{}, nil, nil, fmt.Errorf("make supervisor dir: %w", err)
	}
	j := &simJob{
		dir:    dir,
		log:    m.log.With("attempt", spec.Key),
		left:   m.runTime,
		ended:  make(chan struct{}),
		result: make(chan supervisorResult, 1),
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
	return startStatus{PID: simPIDBase + int(m.pids.Add(1))}, j.result, gone, nil
}

// signal sends sig to the simulated job of supervisor directory dir, as
// signalSupervised asks a real supervisor to.
func (m *simulator) signal(dir string, sig unix.Signal, grace time.Duration) error {
	m.mu.Lock()
	j := m.jobs[dir]
	m.mu.Unlock()
	if j == nil {
		return fmt.Errorf("signal simulated job of %s: %w", filepath.Base(dir), errNoAttempt)
	}
	j.signal(sig, grace)
	return nil
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
	ended  chan struct{}         // closed once res is set
	result chan supervisorResult // brings res once result.json is written
	gone   chan struct{}         // closed once the simulated supervisor is done

	mu     sync.Mutex // guards the fields below
	left   time.Duration
	resume time.Time     // when it last started or continued; zero while stopped
	gen    int           // counts arms, so a stale natural end does nothing
	timers []*time.Timer // the natural end, the run limit, grace kills
	over   bool          // res is set
	res    supervisorResult
}

// signalled is the result of a job ended by sig, with reason.
func signalled(sig unix.Signal, reason string) supervisorResult {
	return supervisorResult{ExitCode: 128 + int(sig), Signal: signalName(sig), Reason: reason}
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
			j.endLocked(supervisorResult{})
		}
	}))
}

// endLocked ends the job with res unless it has ended. The caller holds
// j.mu.
func (j *simJob) endLocked(res supervisorResult) {
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
