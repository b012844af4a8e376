package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/netmgr/netmgr/internal/procinfo"
	"golang.org/x/sys/unix"
)

// A host is a supervisor process: the process that forks attempts'
// jobs, is their subreaper, reaps them and writes their results. It runs
// one attempt (RunAttempt) or every attempt of a stub (RunHost).
//
// One goroutine reaps every child of the process: on each SIGCHLD it
// finds the ended children without reaping them (waitid with WNOWAIT),
// marks a job's first process as ended before it reaps it, so that the
// job's group id is not signalled after the kernel may have given it to
// another process, and hands the exit status to the job's supervisor.
// Other children are orphans of jobs: it reaps them and counts their
// usage for the job whose process group they were in.
type host struct {
	root   string // the process's working directory
	sock   string // the host's socket, absolute; "" for a supervisor of one attempt
	single bool   // it runs one attempt: every orphan is that job's
	log    *slog.Logger
	fs     procinfo.FS
	fsErr  error // from opening /proc
	self   func() (procIdentity, error)

	forkMu sync.Mutex // held across a fork and its registration, and by the reaper per child
	// leaders maps the first process of each running job to its
	// supervisor until it is reaped; groups maps each running attempt's
	// process group to it until its result is written.
	leaders map[int]*attempt
	groups  map[int]*attempt
	// execs maps each command run inside a job (exec.go) to where its
	// exit status goes, until it is reaped.
	execs   map[int]chan leaderExit
	reaping bool // the reaper runs
}

// newHost returns the supervisor process's state; root is its working
// directory, which attempts' socket names are relative to.
func newHost(root string, single bool, log *slog.Logger) *host {
	h := &host{
		root:    root,
		single:  single,
		log:     log,
		self:    sync.OnceValues(func() (procIdentity, error) { return identify(os.Getpid()) }),
		leaders: make(map[int]*attempt),
		groups:  make(map[int]*attempt),
		execs:   make(map[int]chan leaderExit),
	}
	h.fs, h.fsErr = procinfo.NewDefaultFS()
	// Caught, not ignored: an ignored signal stays ignored in the
	// children exec'd, and a job must get SIGHUP (an interactive job's
	// hang-up, which a shell cannot even trap once it starts ignoring it)
	// and SIGPIPE (`yes | head`) as any process does.
	discard := make(chan os.Signal, 1)
	signal.Notify(discard, unix.SIGHUP, unix.SIGPIPE)
	go func() {
		for range discard {
		}
	}()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become child subreaper; orphans of jobs go to init", "err", err)
	}
	return h
}

// identity is the supervisor process's, as state.json records it.
func (h *host) identity() (procIdentity, error) { return h.self() }

// begin starts the attempt of supervisor directory dir, whose socket is
// sock relative to the process's directory ("" for none), running spec,
// or when spec is nil, dir's spec.json, and returns its supervisor
// with what to report to the stub. A nil supervisor means no job runs: the
// status says why, and the error is for the log.
func (h *host) begin(dir, sock string, spec *Spec, log *slog.Logger) (*attempt, startStatus, error) {
	h.startReaper()
	s := &attempt{
		host:    h,
		dir:     dir,
		log:     log,
		exited:  make(chan struct{}),
		leaderc: make(chan leaderExit, 1),
		resultc: make(chan struct{}),
	}
	if spec != nil {
		s.spec = *spec
	} else if err := readJSONFile(filepath.Join(dir, specFile), &s.spec); err != nil {
		return nil, startStatus{Error: err.Error()}, fmt.Errorf("supervise: %w", err)
	}
	s.lim = s.spec.limits()
	s.owner = ownerVars(s.spec.Env)
	if err := s.startJob(); err != nil {
		log.Warn("job failed to start", "err", err)
		s.result = Result{ExitCode: ExecFailedCode, Error: err.Error(), EndedAt: time.Now().UTC()}
		if werr := writeJSONFile(filepath.Join(dir, resultFile), s.result); werr != nil {
			err = errors.Join(err, werr)
		}
		return nil, startStatus{Error: err.Error(), Fault: errors.Is(err, ErrFiles)}, err
	}
	// The socket listens before the stub hears of the job, which it may
	// signal at once. A host's attempts are reached through its own.
	if sock != "" {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			log.Warn("no socket; the stub cannot signal the job", "err", err)
		}
		s.ln = ln
	}
	log.Info("job started", "pid", s.pgid, "path", s.spec.Path, "cgroup", s.spec.Cgroup)
	return s, startStatus{PID: s.pgid, Stdio: s.spec.Stdio != nil}, nil
}

// forget drops s, whose job has ended and been cleaned up, from the
// process groups the reaper knows.
func (h *host) forget(s *attempt) {
	h.forkMu.Lock()
	defer h.forkMu.Unlock()
	delete(h.groups, s.pgid)
}

// fork starts s's job, registers it, so that the reaper knows its first
// process however soon it ends, and returns that process's identity,
// read before the reaper may reap it.
func (h *host) fork(s *attempt) (procIdentity, error) {
	h.forkMu.Lock()
	defer h.forkMu.Unlock()
	if err := s.v1.start(s.cmd); err != nil {
		return procIdentity{}, err
	}
	s.pgid = s.cmd.Process.Pid
	h.leaders[s.pgid] = s
	h.groups[s.pgid] = s
	return identify(s.pgid)
}

// orphans returns the process's children that are no job's first process.
func (h *host) orphans() []int {
	kids := ownChildren()
	h.forkMu.Lock()
	defer h.forkMu.Unlock()
	out := kids[:0]
	for _, pid := range kids {
		if h.leaders[pid] == nil {
			out = append(out, pid)
		}
	}
	return out
}

// startReaper starts the reaper once.
func (h *host) startReaper() {
	h.forkMu.Lock()
	defer h.forkMu.Unlock()
	if h.reaping {
		return
	}
	h.reaping = true
	c := make(chan os.Signal, 1)
	signal.Notify(c, unix.SIGCHLD)
	go func() {
		for range c {
			h.reapEnded()
		}
	}()
}

// reapEnded reaps every child that has ended.
func (h *host) reapEnded() {
	for {
		pid, err := endedChild()
		if err != nil || pid == 0 {
			return
		}
		h.reapChild(pid)
	}
}

// reapChild reaps ended child pid: a job's first process is marked ended
// first and its status goes to its supervisor; an orphan's usage goes to
// the job whose group it was in.
func (h *host) reapChild(pid int) {
	h.forkMu.Lock()
	if done := h.execs[pid]; done != nil {
		delete(h.execs, pid)
		var ws unix.WaitStatus
		var ru unix.Rusage
		_, err := unix.Wait4(pid, &ws, 0, &ru)
		for errors.Is(err, unix.EINTR) {
			_, err = unix.Wait4(pid, &ws, 0, &ru)
		}
		h.forkMu.Unlock()
		done <- leaderExit{status: ws, usage: ru, at: time.Now()}
		return
	}
	leader := h.leaders[pid]
	var owner *attempt
	if leader != nil {
		delete(h.leaders, pid)
		leader.markEnded()
	} else if pgrp, err := procGroup(pid); err == nil {
		owner = h.groups[pgrp]
	}
	if owner == nil && leader == nil && h.single {
		for _, s := range h.groups {
			owner = s
		}
	}
	var ws unix.WaitStatus
	var ru unix.Rusage
	var err error
	for {
		_, err = unix.Wait4(pid, &ws, 0, &ru)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	h.forkMu.Unlock()
	if err != nil {
		h.log.Warn("reap child", "pid", pid, "err", err)
		if leader == nil {
			return
		}
	}
	switch {
	case leader != nil:
		leader.leaderc <- leaderExit{status: ws, usage: ru, at: time.Now()}
	case owner != nil:
		owner.addOrphan(&ru)
	}
}

// endedChild returns the pid of a child that has ended, without reaping
// it, or 0 when none has.
func endedChild() (int, error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return siginfoPID(&info), nil
	}
}

// siginfoPID returns si_pid: the first field of siginfo_t's union, which
// follows three ints aligned to a pointer. waitid leaves it 0 when no
// child has ended.
func siginfoPID(info *unix.Siginfo) int {
	const word = unsafe.Sizeof(uintptr(0))
	off := (12 + word - 1) &^ (word - 1)
	b := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(info))
	return int(int32(binary.NativeEndian.Uint32(b[off:])))
}
