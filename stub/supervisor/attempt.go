package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/internal/beneath"
	"golang.org/x/sys/unix"
)

// statusFD is the descriptor of the pipe on which a supervisor started by
// a stub reports that the job runs, or a supervisor host that it listens
// (exec.Cmd.ExtraFiles[0]).
const statusFD = 3

// cleanupTimeout bounds how long a supervisor keeps killing what is left
// of a job.
const cleanupTimeout = 10 * time.Second

// attempt supervises one attempt's job inside a supervisor process (its
// host), which outlives the stub that started it: it starts the job,
// serves the attempt's requests, enforces its limits (attempt_control.go),
// and once the job's first process has ended kills what is left and
// writes the result.
type attempt struct {
	host  *host
	dir   string            // the supervisor directory
	ln    *net.UnixListener // the attempt's own socket; nil in a host, or if it could not listen
	spec  Spec
	lim   limits
	log   *slog.Logger
	owner []string // the NETMGR_ variables that name the attempt in its processes' environment

	cmd     *exec.Cmd
	pgid    int             // the job's process group: its first process's pid
	cg      *jobCgroup      // nil when the job runs in a process group only
	v1      *jobCgroupsV1   // the job's cgroup v1 directories; nil for none
	started time.Time       // with the monotonic reading the run limit counts from
	exited  chan struct{}   // closed once the job's first process has ended
	leaderc chan leaderExit // how it ended, once the host's reaper reaped it
	resultc chan struct{}   // closed once result.json is written
	result  Result
	wg      sync.WaitGroup // limits, grace timers, the socket and its handlers

	mu       sync.Mutex // guards ended, reason, peakKB and orphanRU
	ended    bool       // the first process ended: nothing more is signalled
	reason   string     // the limit that ended the job, "" if none did
	peakKB   int64      // largest resident memory sampled
	orphanRU usage      // of the job's other processes that the host reaped
}

// leaderExit is how a job's first process ended.
type leaderExit struct {
	status unix.WaitStatus
	usage  unix.Rusage
	at     time.Time
}

// usage is CPU time in milliseconds and peak resident memory.
type usage struct {
	userMS, sysMS, maxRSSKB int64
}

// add adds what ru accounts for.
func (u *usage) add(ru *unix.Rusage) {
	u.userMS += ru.Utime.Sec*1000 + ru.Utime.Usec/1000
	u.sysMS += ru.Stime.Sec*1000 + ru.Stime.Usec/1000
	u.maxRSSKB = max(u.maxRSSKB, ru.Maxrss)
}

// RunAttempt is the supervisor role of the netmgr binary for one attempt
// (`netmgr supervise --dir DIR`; a stub runs its attempts in its
// supervisor host, see RunHost, and falls back to this): it runs
// the job described by DIR/spec.json in its own process group, and its
// own cgroup when the spec names one, waits for it, enforces its queue
// limits, kills whatever is left of it when its first process ends, and
// writes DIR/state.json once the job runs and DIR/result.json when it has
// ended. Meanwhile it answers the stub on the unix socket DIR/sock. It
// makes itself a child subreaper, so orphans of the job come back to it.
// It returns once the result is written; the stub that started it may be
// gone by then.
func RunAttempt(dir string) error {
	_ = os.Unsetenv(supervisorEnv)
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("attempt", filepath.Base(dir))
	h := newHost(dir, true, log)
	var status *os.File
	if _, err := unix.FcntlInt(statusFD, unix.F_GETFD, 0); err == nil {
		unix.CloseOnExec(statusFD)
		status = os.NewFile(statusFD, "status")
	}
	s, st, err := h.begin(dir, sockFile, nil, log)
	if status != nil {
		if err := json.NewEncoder(status).Encode(st); err != nil {
			log.Warn("report start to the stub", "err", err)
		}
		_ = status.Close()
	}
	if s == nil {
		return err
	}
	s.run()
	return nil
}

// run serves the attempt's socket and enforces its limits until the job
// has ended and its result is written.
func (s *attempt) run() {
	ln := s.ln
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
	s.host.forget(s)
}

// startJob starts the job and writes state.json. A job that started but
// whose state cannot be written is killed: a stub could not find it.
func (s *attempt) startJob() error {
	cred := (*syscall.Credential)(nil)
	if c := s.spec.Cred; c != nil {
		cred = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	cwd := s.spec.Dir
	if s.spec.Chdir != "" {
		cwd = s.spec.Chdir
	}
	s.cmd = &exec.Cmd{
		Path:        s.spec.Path,
		Args:        s.spec.Args,
		Dir:         cwd,
		Env:         s.spec.Env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: cred},
	}
	// Through beneath: a copy_in unpacked into the exec dir may have
	// put a link or a FIFO where stdout or stderr was, and the
	// supervisor opens them as root.
	dir, err := beneath.Open(s.spec.Dir)
	if err != nil {
		return fmt.Errorf("%w: open exec dir: %w", ErrFiles, err)
	}
	defer dir.Close()
	for _, name := range []string{"stdout", "stderr"} {
		f, err := dir.OpenAppend(name, 0o600)
		if err != nil {
			return fmt.Errorf("%w: open %s: %w", ErrFiles, name, err)
		}
		defer f.Close()
		if name == "stdout" {
			s.cmd.Stdout = f
		} else {
			s.cmd.Stderr = f
		}
	}
	if s.spec.Stdio != nil {
		files, err := s.spec.Stdio.connect(s.cmd, s.dir)
		if err != nil {
			return err
		}
		defer closeAll(files)
	}
	if len(s.spec.CgroupsV1) > 0 {
		v1, err := createCgroupsV1(s.spec)
		if err != nil {
			s.log.Warn("no cgroup v1 directories; the job's CPUs and GPUs are not enforced through them", "err", err)
		} else {
			s.v1 = v1
		}
	}
	if s.spec.Cgroup != "" {
		cg, fd, err := createCgroup(s.spec.Cgroup)
		if err != nil {
			s.log.Warn("no cgroup; the job runs in a process group only", "err", err)
		} else {
			defer fd.Close()
			s.cg = cg
			cpus, cpuset := s.spec.CPUs, s.spec.CPUSet
			if s.v1.has("cpu.cfs_quota_us") {
				cpus = 0
			}
			if s.v1.has("cpuset.cpus") {
				cpuset = ""
			}
			if err := cg.limitCPUs(cpus, cpuset); err != nil {
				s.log.Warn("the job's CPUs are not enforced", "err", err)
			}
			if s.spec.FenceGPUs && !s.v1.has("devices.deny") {
				if err := fenceGPUsBPF(int(fd.Fd()), s.spec.GPUs); err != nil {
					s.log.Warn("the GPUs not given to the job are not fenced", "err", err)
				}
			}
			s.cmd.SysProcAttr.UseCgroupFD = true
			s.cmd.SysProcAttr.CgroupFD = int(fd.Fd())
		}
	}
	job, err := s.host.fork(s)
	s.started = time.Now()
	if err != nil && s.pgid == 0 {
		if s.cg != nil {
			_ = s.cg.remove()
		}
		if s.v1 != nil {
			_ = s.v1.remove()
		}
		return err
	}
	if err == nil {
		var self procIdentity
		if self, err = s.host.identity(); err == nil {
			err = replaceJSONFile(filepath.Join(s.dir, stateFile), attemptState{
				Supervisor: self, Job: job, Cgroup: s.spec.Cgroup, CgroupsV1: s.v1.list(), StartedAt: s.started.UTC(),
				Restartable: s.spec.Restartable, Sock: s.host.sock,
			})
			if err != nil {
				err = fmt.Errorf("%w: %w", ErrFiles, err)
			}
		}
	}
	if err != nil {
		_ = s.signal(unix.SIGKILL, 0)
		<-s.leaderc
		_ = s.cmd.Process.Release()
		s.cleanup()
		s.host.forget(s)
		return fmt.Errorf("supervisor: %w", err)
	}
	return nil
}

// markEnded records that the job's first process has ended. The host's
// reaper calls it before it reaps the process, so that no signal meant for
// the job's group reaches a group that took over its id.
func (s *attempt) markEnded() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	close(s.exited)
}

// addOrphan adds the usage of a process of the job that the host reaped.
func (s *attempt) addOrphan(ru *unix.Rusage) {
	s.mu.Lock()
	s.orphanRU.add(ru)
	s.mu.Unlock()
}

// owns reports whether process pid carries the attempt's NETMGR_
// variables in its environment: how a host of several jobs without
// cgroups knows an orphan of this job that left its process group.
func (s *attempt) owns(pid int) bool {
	if len(s.owner) == 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	vars := strings.Split(string(b), "\x00")
	for _, v := range s.owner {
		if !slices.Contains(vars, v) {
			return false
		}
	}
	return true
}

// ownerVars returns the variables of env that name the attempt, or nil
// unless all three are there.
func ownerVars(env []string) []string {
	var out []string
	for _, v := range env {
		for _, name := range []string{"NETMGR_JOB_ID=", "NETMGR_INSTANCE=", "NETMGR_ATTEMPT="} {
			if strings.HasPrefix(v, name) {
				out = append(out, v)
			}
		}
	}
	if len(out) != 3 {
		return nil
	}
	return out
}

// wait waits for the job's first process, kills what is left of the job
// and writes result.json.
func (s *attempt) wait() {
	le := <-s.leaderc
	_ = s.cmd.Process.Release()
	s.mu.Lock()
	reason, peakKB := s.reason, s.peakKB
	s.mu.Unlock()

	res := Result{EndedAt: le.at.UTC(), Reason: reason, Leftovers: s.cleanup()}
	if ws := le.status; ws.Signaled() {
		res.Signal = signalName(ws.Signal())
		res.ExitCode = 128 + int(ws.Signal())
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	// The first process's usage counts the children it waited for; the
	// host adds that of the job's orphans it reaped.
	s.mu.Lock()
	u := s.orphanRU
	s.mu.Unlock()
	u.add(&le.usage)
	res.UserMS, res.SysMS, res.MaxRSSKB = u.userMS, u.sysMS, max(u.maxRSSKB, peakKB)
	s.result = res
	if err := writeJSONFile(filepath.Join(s.dir, resultFile), res); err != nil {
		s.log.Error("result lost", "err", err)
	}
	s.log.Info("job ended", "exit_code", res.ExitCode, "signal", res.Signal, "reason", res.Reason,
		"leftovers_killed", len(res.Leftovers))
}

// cleanup SIGKILLs every process left in the job's cgroup or process
// group, or orphaned to the supervisor, and removes the cgroup once the
// host has reaped them. It returns what it killed.
func (s *attempt) cleanup() []Leftover {
	var killed []Leftover
	seen := make(map[int]bool)
	deadline := time.Now().Add(cleanupTimeout)
	for {
		left := s.survivors()
		if len(left) == 0 {
			break
		}
		for _, pid := range left {
			if !seen[pid] {
				seen[pid] = true
				killed = append(killed, Leftover{PID: pid, Comm: procComm(pid)})
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
		// A killed process leaves the cgroup once reaped, which the host's
		// reaper does as soon as it is told.
		err := s.cg.remove()
		for err != nil && errors.Is(err, unix.EBUSY) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			err = s.cg.remove()
		}
		if err != nil {
			s.log.Warn("cgroup left behind", "err", err)
		}
	}
	if err := s.v1.removeBy(deadline); err != nil {
		s.log.Warn("cgroup v1 directories left behind", "err", err)
	}
	if len(killed) > 0 {
		s.log.Info("killed what the job left running", "processes", killed)
	}
	return killed
}

// survivors returns the live processes of the job besides its first: the
// members of its cgroup, of its process group, and the orphans that left
// the group and came back to the supervisor process as their subreaper
// (in a host of several jobs, those whose environment names the attempt).
// Zombies do not count: the host's reaper reaps them.
//
// It looks through /proc only when the process group still has a member:
// with hundreds of jobs ending at once, a scan of every process for each
// was a fifth of the machine's CPU, and most jobs leave nothing.
func (s *attempt) survivors() []int {
	set := make(map[int]bool)
	if s.cg != nil {
		pids, _ := s.cg.procs()
		for _, pid := range pids {
			set[pid] = true
		}
	}
	// An orphan of a job with a cgroup is in that cgroup: the search of
	// the process's children (a /proc directory per thread) is for jobs
	// without one.
	if s.cg == nil {
		for _, pid := range s.v1.procs() {
			set[pid] = true
		}
		for _, pid := range s.host.orphans() {
			if s.host.single || s.owns(pid) {
				set[pid] = true
			}
		}
	}
	// The job's first process is reaped by now, so a group without live
	// members no longer exists (ESRCH); EPERM and the rest mean look.
	if err := unix.Kill(-s.pgid, 0); !errors.Is(err, unix.ESRCH) && s.host.fsErr == nil {
		self := os.Getpid()
		pids, _ := s.host.fs.AllPIDs()
		for _, pid := range pids {
			st, err := s.host.fs.Stat(pid)
			if err != nil || st.State == "Z" || st.PID == self {
				continue
			}
			if st.PGRP == s.pgid {
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
