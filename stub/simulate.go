package stub

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client/dblang"
	"golang.org/x/sys/unix"
)

// Simulation makes a stub simulate its jobs instead of running them, so
// that many stubs fit in one process for tests and benchmarks at scale
// (`netmgr sim`). Everything above the fork is the real stub's: the API,
// Start handling and its lease check, the exec dir, the outbox, the
// sender, the lease keeper, gossip and facts. Only the supervisor process
// is replaced by a simulated one in the stub's process, which serves the
// same socket in the same supervisor directory: the job it pretends to
// run gets a fake but unique pid (above the kernel's largest pid, so it
// names no process), runs for RunTime and exits 0. A signal ends it at
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

// simulator starts the simulated supervisors of one stub. It is safe for
// concurrent use.
type simulator struct {
	runTime time.Duration
	log     *slog.Logger
	pids    atomic.Int64 // simulated pids handed out so far
}

// launch stands in for runner.launch: it checks that the binary could be
// executed, then starts a simulated supervisor serving the socket of dir.
// The channel it returns is closed once that supervisor is gone.
func (m *simulator) launch(dir string, spec supervisorSpec) (startStatus, <-chan struct{}, error) {
	gone := make(chan struct{})
	if err := executable(spec.Path); err != nil {
		close(gone)
		return startStatus{Error: err.Error()}, gone, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return startStatus{}, nil, fmt.Errorf("make supervisor dir: %w", err)
	}
	ln, err := listenSupervisor(dir)
	if err != nil {
		return startStatus{}, nil, err
	}
	j := &simJob{
		dir:    dir,
		log:    m.log.With("attempt", spec.Key),
		left:   m.runTime,
		ended:  make(chan struct{}),
		done:   make(chan struct{}),
		gone:   gone,
		resume: time.Now(),
	}
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
	// The simulated supervisor's goroutines stand in for a process that
	// outlives the stub: gone is how its launcher waits for them.
	go j.run(ln)
	return startStatus{PID: simPIDBase + int(m.pids.Add(1))}, gone, nil
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

// listenSupervisor listens on the socket of supervisor directory dir. A
// path too long for a socket address is reached through /proc/self/fd, as
// dialSupervisor does. The socket file is not removed on close.
func listenSupervisor(dir string) (*net.UnixListener, error) {
	path := filepath.Join(dir, sockFile)
	addr := path
	if len(path) > maxSockPath {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("listen on supervisor socket: %w", &os.PathError{Op: "open", Path: dir, Err: err})
		}
		defer unix.Close(fd)
		addr = "/proc/self/fd/" + strconv.Itoa(fd) + "/" + sockFile
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on supervisor socket of %s: %w", filepath.Base(dir), err)
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}

// simJob is a simulated supervisor and the job it pretends to run.
type simJob struct {
	dir   string
	log   *slog.Logger
	ended chan struct{} // closed once result is set
	done  chan struct{} // closed once result.json is written
	gone  chan struct{} // closed once the socket is closed and every request answered
	conns sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	left   time.Duration
	resume time.Time     // when it last started or continued; zero while stopped
	gen    int           // counts arms, so a stale natural end does nothing
	timers []*time.Timer // the natural end, the run limit, grace kills
	over   bool          // result is set
	result supervisorResult
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
	j.result = res
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

// run serves the socket until the job has ended, writes result.json,
// answers the requests still open and closes the socket.
func (j *simJob) run(ln *net.UnixListener) {
	j.conns.Go(func() {
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			j.conns.Go(func() { j.handle(conn) })
		}
	})
	<-j.ended
	j.mu.Lock()
	res := j.result
	j.mu.Unlock()
	if b, err := json.Marshal(res); err != nil {
		j.log.Error("encode simulated result", "err", err)
	} else if err := os.WriteFile(filepath.Join(j.dir, resultFile), b, 0o600); err != nil {
		// Not durable, and need not be: nothing of the simulated job
		// survives the process.
		j.log.Warn("simulated result not written", "err", err)
	}
	close(j.done)
	_ = ln.Close()
	j.conns.Wait()
	if err := os.Remove(filepath.Join(j.dir, sockFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		j.log.Debug("remove simulated supervisor socket", "err", err)
	}
	close(j.gone)
}

// handle answers one request, as supervisor.handle does.
func (j *simJob) handle(conn *net.UnixConn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	var req supRequest
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		return
	}
	var resp supResponse
	switch req.Op {
	case opSignal:
		j.signal(unix.Signal(req.Signal), time.Duration(req.GraceMS)*time.Millisecond)
	case opWait:
		<-j.done
		j.mu.Lock()
		res := j.result
		j.mu.Unlock()
		resp.Result = &res
	default:
		resp.Error = fmt.Sprintf("unknown operation %q", req.Op)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
	_ = json.NewEncoder(conn).Encode(resp)
}
