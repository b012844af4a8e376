package stub

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// statusFD is the descriptor of the pipe on which a supervisor started by
// a stub reports that the job runs (exec.Cmd.ExtraFiles[0]).
const statusFD = 3

// cleanupTimeout bounds how long a supervisor keeps killing what is left
// of a job.
const cleanupTimeout = 10 * time.Second

// supervisor runs one attempt's job, outliving the stub that started it.
type supervisor struct {
	dir    string // the supervisor directory, also its working directory
	spec   supervisorSpec
	lim    limits
	log    *slog.Logger
	fs     procfs.FS
	fsErr  error    // from opening /proc
	status *os.File // the status pipe; nil when run by hand

	cmd     *exec.Cmd
	pgid    int           // the job's process group: its first process's pid
	cg      *jobCgroup    // nil when the job runs in a process group only
	started time.Time     // with the monotonic reading the run limit counts from
	exited  chan struct{} // closed once the job's first process has ended
	resultc chan struct{} // closed once result.json is written
	result  supervisorResult
	wg      sync.WaitGroup // limits, grace timers, the socket and its handlers

	mu     sync.Mutex // guards ended, reason and peakKB
	ended  bool       // the first process ended: nothing more is signalled
	reason string     // the limit that ended the job, "" if none did
	peakKB int64      // largest resident memory sampled
}

// Supervise is the supervisor role of the netmgr binary (`netmgr
// supervise --dir DIR`): it runs the job described by DIR/spec.json in its
// own process group, and its own cgroup when the spec names one, waits for
// it, enforces its queue limits, kills whatever is left of it when its
// first process ends, and writes DIR/state.json once the job runs and
// DIR/result.json when it has ended. Meanwhile it answers the stub on the
// unix socket DIR/sock. It makes itself a child subreaper, so orphans of
// the job come back to it. It returns once the result is written; the
// stub that started it may be gone by then.
func Supervise(dir string) error {
	_ = os.Unsetenv(supervisorEnv)
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	s := &supervisor{
		dir:     dir,
		log:     slog.New(slog.NewTextHandler(os.Stderr, nil)).With("attempt", filepath.Base(dir)),
		exited:  make(chan struct{}),
		resultc: make(chan struct{}),
	}
	if _, err := unix.FcntlInt(statusFD, unix.F_GETFD, 0); err == nil {
		unix.CloseOnExec(statusFD)
		s.status = os.NewFile(statusFD, "status")
	}
	if err := readJSONFile(filepath.Join(dir, specFile), &s.spec); err != nil {
		s.report(startStatus{Error: err.Error()})
		return fmt.Errorf("supervise: %w", err)
	}
	s.lim = s.spec.limits()
	s.fs, s.fsErr = procfs.NewDefaultFS()
	signal.Ignore(unix.SIGHUP, unix.SIGPIPE)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		s.log.Warn("cannot become child subreaper; orphans of the job go to init", "err", err)
	}

	if err := s.startJob(); err != nil {
		s.log.Warn("job failed to start", "err", err)
		s.result = supervisorResult{ExitCode: execFailedCode, Error: err.Error(), EndedAt: time.Now().UTC()}
		werr := writeJSONFile(filepath.Join(dir, resultFile), s.result)
		s.report(startStatus{Error: err.Error()})
		return werr
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sockFile, Net: "unix"})
	if err != nil {
		s.log.Warn("no socket; the stub cannot signal the job", "err", err)
	}
	s.report(startStatus{PID: s.pgid})
	s.log.Info("job started", "pid", s.pgid, "path", s.spec.Path, "cgroup", s.spec.Cgroup)

	if ln != nil {
		s.wg.Go(func() { s.serve(ln) })
	}
	s.armLimits()
	s.wait()
	close(s.resultc)
	if ln != nil {
		_ = ln.Close()
	}
	s.wg.Wait()
	return nil
}

// startJob starts the job and writes state.json. A job that started but
// whose state cannot be written is killed: a stub could not find it.
func (s *supervisor) startJob() error {
	cred := (*syscall.Credential)(nil)
	if c := s.spec.Cred; c != nil {
		cred = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	s.cmd = &exec.Cmd{
		Path:        s.spec.Path,
		Args:        s.spec.Args,
		Dir:         s.spec.Dir,
		Env:         s.spec.Env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: cred},
	}
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(s.spec.Dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open %s: %w", name, err)
		}
		defer f.Close()
		if name == "stdout" {
			s.cmd.Stdout = f
		} else {
			s.cmd.Stderr = f
		}
	}
	if s.spec.Cgroup != "" {
		cg, fd, err := createCgroup(s.spec.Cgroup)
		if err != nil {
			s.log.Warn("no cgroup; the job runs in a process group only", "err", err)
		} else {
			defer fd.Close()
			s.cg = cg
			s.cmd.SysProcAttr.UseCgroupFD = true
			s.cmd.SysProcAttr.CgroupFD = int(fd.Fd())
		}
	}
	err := s.cmd.Start()
	s.started = time.Now()
	if err != nil {
		if s.cg != nil {
			_ = s.cg.remove()
		}
		return err
	}
	s.pgid = s.cmd.Process.Pid
	self, err := identify(os.Getpid())
	if err == nil {
		var job procIdentity
		if job, err = identify(s.pgid); err == nil {
			err = replaceJSONFile(filepath.Join(s.dir, stateFile), supervisorState{
				Supervisor: self, Job: job, Cgroup: s.spec.Cgroup, StartedAt: s.started.UTC(),
			})
		}
	}
	if err != nil {
		s.cleanup()
		_ = s.cmd.Wait()
		return fmt.Errorf("supervisor: %w", err)
	}
	return nil
}

// report writes st on the status pipe, if any, and closes it.
func (s *supervisor) report(st startStatus) {
	if s.status == nil {
		return
	}
	if err := json.NewEncoder(s.status).Encode(st); err != nil {
		s.log.Warn("report start to the stub", "err", err)
	}
	_ = s.status.Close()
	s.status = nil
}

// wait waits for the job's first process, kills and reaps what is left of
// the job and writes result.json.
func (s *supervisor) wait() {
	var info unix.Siginfo
	for {
		// WNOWAIT: the process stays a zombie, holding its pid and
		// process group, until ended is set and no signal can go astray.
		err := unix.Waitid(unix.P_PID, s.pgid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	endedAt := time.Now().UTC()
	s.mu.Lock()
	s.ended = true
	reason, peakKB := s.reason, s.peakKB
	s.mu.Unlock()
	close(s.exited)
	_ = s.cmd.Wait() // the exit status is in s.cmd.ProcessState

	res := supervisorResult{EndedAt: endedAt, Reason: reason, Leftovers: s.cleanup()}
	ps := s.cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = signalName(ws.Signal())
		res.ExitCode = 128 + int(ws.Signal())
	} else {
		res.ExitCode = ps.ExitCode()
	}
	// Every process of the job that ended is reaped by now: the first by
	// Wait, orphans by cleanup.
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err == nil {
		res.UserMS = ru.Utime.Sec*1000 + ru.Utime.Usec/1000
		res.SysMS = ru.Stime.Sec*1000 + ru.Stime.Usec/1000
		res.MaxRSSKB = ru.Maxrss
	}
	res.MaxRSSKB = max(res.MaxRSSKB, peakKB)
	s.result = res
	if err := writeJSONFile(filepath.Join(s.dir, resultFile), res); err != nil {
		s.log.Error("result lost", "err", err)
	}
	s.log.Info("job ended", "exit_code", res.ExitCode, "signal", res.Signal, "reason", res.Reason,
		"leftovers_killed", len(res.Leftovers))
}

// cleanup SIGKILLs every process left in the job's cgroup or process
// group, or orphaned to the supervisor, reaps them and removes the
// cgroup. It returns what it killed.
func (s *supervisor) cleanup() []leftover {
	var killed []leftover
	seen := make(map[int]bool)
	deadline := time.Now().Add(cleanupTimeout)
	for {
		s.reap()
		left := s.survivors()
		if len(left) == 0 {
			break
		}
		for _, pid := range left {
			if !seen[pid] {
				seen[pid] = true
				killed = append(killed, leftover{PID: pid, Comm: procComm(pid)})
			}
		}
		if time.Now().After(deadline) {
			s.log.Error("processes of the job survive SIGKILL", "pids", left)
			break
		}
		if s.cg != nil {
			_ = s.cg.signal(unix.SIGKILL)
		}
		_ = unix.Kill(-s.pgid, unix.SIGKILL)
		for _, pid := range left {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond) // let the kernel finish the kills before looking again
	}
	if s.cg != nil {
		if err := s.cg.remove(); err != nil {
			s.log.Warn("cgroup left behind", "err", err)
		}
	}
	if len(killed) > 0 {
		s.log.Info("killed what the job left running", "processes", killed)
	}
	return killed
}

// survivors returns the live processes of the job besides its first: the
// members of its cgroup, of its process group, and the supervisor's own
// children (orphans that left the group, which come back to it as their
// subreaper). Zombies do not count.
//
// It looks through /proc only when the process group still has a member:
// with hundreds of supervisors ending at once, a scan of every process by
// each was a fifth of the machine's CPU, and most jobs leave nothing.
func (s *supervisor) survivors() []int {
	set := make(map[int]bool)
	if s.cg != nil {
		pids, _ := s.cg.procs()
		for _, pid := range pids {
			set[pid] = true
		}
	}
	for _, pid := range ownChildren() {
		set[pid] = true
	}
	// The job's first process is reaped by now, so a group without live
	// members no longer exists (ESRCH); EPERM and the rest mean look.
	if err := unix.Kill(-s.pgid, 0); !errors.Is(err, unix.ESRCH) && s.fsErr == nil {
		self := os.Getpid()
		procs, _ := s.fs.AllProcs()
		for _, p := range procs {
			st, err := p.Stat()
			if err != nil || st.State == "Z" || st.PID == self {
				continue
			}
			if st.PGRP == s.pgid || st.PPID == self {
				set[st.PID] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for pid := range set {
		if state, _, err := procStat(pid); err == nil && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// reap waits for every child that has ended, without blocking.
func (s *supervisor) reap() {
	for {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

// procComm is the command name of process pid, "" if it is gone.
func procComm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// ownChildren returns the pids of this process's children, from each of
// its threads' /proc children list (orphans are handed to any thread of a
// subreaper).
func ownChildren() []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
