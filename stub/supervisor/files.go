package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The files of a supervisor directory, <DataDir>/attempts/<job>.<instance>.<attempt>.
// It lives in the stub's private DataDir, not in the attempt's exec dir,
// which belongs to the job's owner: a job must not be able to forge its
// own result.
const (
	specFile   = "spec.json"      // what to run, for a supervisor of one attempt (a host gets it on its socket)
	stateFile  = "state.json"     // the supervisor's and the job's identity
	resultFile = "result.json"    // how the job ended
	sockFile   = "sock"           // the unix socket of a supervisor of one attempt
	logFile    = "supervisor.log" // the stderr of a supervisor of one attempt
)

// Spec is what the stub asks a supervisor to run (spec.json).
type Spec struct {
	Key  string   `json:"key"` // job.instance.attempt, for the log
	Path string   `json:"path"`
	Args []string `json:"args"` // argv, Args[0] included
	Dir  string   `json:"dir"`  // the attempt's exec dir: stdout, stderr, and the cwd unless Chdir is set
	Env  []string `json:"env"`
	// Chdir, when set, is the job's working directory (netexec --chdir)
	// instead of Dir.
	Chdir string `json:"chdir,omitempty"`
	// Cred, when set, is the user the job runs as.
	Cred *Cred `json:"cred,omitempty"`
	// The queue limits; 0 means none.
	RunMS   int64 `json:"run_ms,omitempty"`
	GraceMS int64 `json:"grace_ms,omitempty"`
	MemKB   int64 `json:"mem_kb,omitempty"`
	// CPUs, when positive, is the job's CPU limit, written to its
	// cgroup's cpu.max; CPUSet, when set, the CPUs it runs on alone
	// (cpuset.cpus). DiskKB, when positive, is the space its exec dir
	// may take: past it the job is SIGKILLed with reason "disk: ...".
	CPUs   int    `json:"cpus,omitempty"`
	CPUSet string `json:"cpuset,omitempty"`
	DiskKB int64  `json:"disk_kb,omitempty"`
	// WarnSignal, when not 0, is sent to the job WarnLeadMS before RunMS
	// passes (signal=SIG@LEAD): a warning the job may trap to checkpoint.
	WarnSignal int   `json:"warn_signal,omitempty"`
	WarnLeadMS int64 `json:"warn_lead_ms,omitempty"`
	// Cgroup, when set, is the cgroup v2 directory the supervisor creates
	// for the job; empty means a process group only.
	Cgroup string `json:"cgroup,omitempty"`
	// CgroupsV1, when set, are cgroup v1 directories, one per hierarchy
	// (cpu, cpuset, devices), that the supervisor creates for the job as
	// well, where the v2 tree lacks the controller (cgroupv1.go); the
	// job's processes start in them. FenceGPUs makes the devices one deny
	// every nvidia GPU but GPUs (the minors of /dev/nvidiaN).
	CgroupsV1 []string `json:"cgroups_v1,omitempty"`
	FenceGPUs bool     `json:"fence_gpus,omitempty"`
	GPUs      []int    `json:"gpus,omitempty"`
	// Restartable is the StartRequest's: a stub adopting the supervisor
	// needs it.
	Restartable bool `json:"restartable,omitempty"`
	// LeaseFile, for a restartable job, is where the stub records its
	// lease; the supervisor stops the job when that lease runs out, even
	// with no stub alive (lease.go).
	LeaseFile string `json:"lease_file,omitempty"`
	// Stdio, when set, connects the job to its stub for an interactive
	// session (stdio.go) instead of /dev/null and the files.
	Stdio *Stdio `json:"stdio,omitempty"`
}

// Cred is the job's user.
type Cred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// limits returns the spec's queue limits.
func (s Spec) limits() limits {
	return limits{
		run:    time.Duration(s.RunMS) * time.Millisecond,
		grace:  time.Duration(s.GraceMS) * time.Millisecond,
		memKB:  s.MemKB,
		diskKB: s.DiskKB,
		warn:   unix.Signal(s.WarnSignal),
		lead:   time.Duration(s.WarnLeadMS) * time.Millisecond,
	}
}

// attemptState is state.json, written by the supervisor once the job
// runs.
type attemptState struct {
	Supervisor procIdentity `json:"supervisor"`
	// Job is the job's first process; its pid is also its process group.
	Job       procIdentity `json:"job"`
	Cgroup    string       `json:"cgroup,omitempty"`
	StartedAt time.Time    `json:"started_at"`
	// CgroupsV1 are the job's cgroup v1 directories, removed with what
	// is left of a lost attempt.
	CgroupsV1 []string `json:"cgroups_v1,omitempty"`
	// Restartable is the spec's: a stub adopting the attempt needs it.
	Restartable bool `json:"restartable,omitempty"`
	// Sock is the socket of the supervisor host that runs the attempt;
	// empty for a supervisor of one attempt, which serves "sock" in the
	// attempt's directory.
	Sock string `json:"sock,omitempty"`
}

// Result is result.json: how the job ended.
type Result struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"` // name without SIG
	Error    string `json:"error,omitempty"`  // the exec error
	Reason   string `json:"reason,omitempty"` // the limit that ended it
	UserMS   int64  `json:"user_ms"`
	SysMS    int64  `json:"sys_ms"`
	MaxRSSKB int64  `json:"max_rss_kb"`
	// Leftovers are the processes still in the job's group or cgroup
	// (or orphaned to the supervisor) after the job's first process
	// ended; the supervisor killed them.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	EndedAt   time.Time  `json:"ended_at"`
}

// ExecFailedCode is the exit code of an attempt whose job could not be
// started, as a shell reports a command it cannot run.
const ExecFailedCode = 127

// Leftover is one process killed because it outlived its job.
type Leftover struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Started is what a Start reports of an attempt once its job runs or
// could not be started.
type Started struct {
	// PID is the job's first process, which is also its process group;
	// 0 when the job could not be started.
	PID int
	// Error is why the job could not be started (the exec error); "" when
	// it runs.
	Error string
	// Fault is set with Error when the job could not start because its
	// files could not be made (ErrFiles): the machine's fault, not the
	// job's.
	Fault bool
	// Stdio is set when the job's stdio is connected as Spec.Stdio asked
	// (a supervisor of an older build ignores it).
	Stdio bool
	// Ended brings the job's result when the supervisor pushes it; it is
	// closed without one when the push cannot come any more, and nil when
	// no push comes (ask with Wait).
	Ended <-chan Result
	// Settle waits, for a bounded time, until the attempt's supervisor is
	// done with it: for undoing a start whose job was killed.
	Settle func()
}

// startStatus is the line a supervisor writes on its status pipe (fd 3)
// once the job runs (PID) or could not be started (Error).
type startStatus struct {
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
	// Fault is Started.Fault; a host of an older build never sets it.
	Fault bool `json:"fault,omitempty"`
	// Stdio is set when the job's stdio is connected as Spec.Stdio
	// asked; a host of an older build never sets it.
	Stdio bool `json:"stdio,omitempty"`
}

// writeJSONFile writes v to path atomically and durably: a temporary file
// in the same directory, synced, renamed over path, and the directory
// synced. It is for what must outlive a crash of the machine: a job's
// result.
func writeJSONFile(path string, v any) error {
	return writeJSONAtomic(path, v, true)
}

// replaceJSONFile writes v to path atomically but does not sync it. It is
// for files that matter only while this boot lasts (spec.json, state.json,
// the lease deadline on the boot clock): a stub or supervisor that crashes
// still finds them in the page cache, and after a crash of the machine no
// supervisor and no job of this boot is left for them to describe (the boot
// id tells). Every start skips two file syncs and two directory syncs.
func replaceJSONFile(path string, v any) error {
	return writeJSONAtomic(path, v, false)
}

// writeJSONAtomic writes v to path through a temporary file renamed over it,
// syncing file and directory when durable.
func writeJSONAtomic(path string, v any, durable bool) error {
	// Compact: only programs read these files, and indenting cost as
	// much as encoding.
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !durable {
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// readJSONFile decodes the JSON file path into v; a missing file is an
// error wrapping os.ErrNotExist.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// readResult returns the result in supervisor directory dir, or an error
// wrapping errNoResult when there is none yet.
func readResult(dir string) (Result, error) {
	var res Result
	err := readJSONFile(filepath.Join(dir, resultFile), &res)
	if errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("read result of %s: %w", filepath.Base(dir), errNoResult)
	}
	return res, err
}

// outcome tells what the supervisor directory dir holds, without asking
// its supervisor: the result once written. Without one, it returns an
// error wrapping ErrRunning while the supervisor recorded in dir's state
// still runs, or else why that supervisor is gone without a result: the
// attempt is lost.
func outcome(dir string) (Result, error) {
	if res, err := readResult(dir); err == nil {
		return res, nil
	}
	if err := supervisorAlive(dir); err != nil {
		// It may have written its result just before it went.
		if res, rerr := readResult(dir); rerr == nil {
			return res, nil
		}
		return Result{}, err
	}
	return Result{}, fmt.Errorf("attempt %s: %w", filepath.Base(dir), ErrRunning)
}

// supervisorAlive returns nil when the supervisor recorded in dir's state
// file still runs.
func supervisorAlive(dir string) error {
	var st attemptState
	if err := readJSONFile(filepath.Join(dir, stateFile), &st); err != nil {
		return err
	}
	return st.Supervisor.verify()
}

// Adopted is what the state of a supervisor directory tells of the job
// its supervisor started.
type Adopted struct {
	PID         int // the job's first process, also its process group
	StartedAt   time.Time
	Restartable bool
}

// Adopt reads what the state of dir tells of its job, for a stub taking
// over an attempt that no record of its own names (its predecessor died
// before recording the CHILD_REGISTER). An error means dir holds no state:
// its supervisor started no job. It does not block.
func Adopt(dir string) (Adopted, error) {
	var st attemptState
	if err := readJSONFile(filepath.Join(dir, stateFile), &st); err != nil {
		return Adopted{}, err
	}
	return Adopted{PID: st.Job.PID, StartedAt: st.StartedAt, Restartable: st.Restartable}, nil
}
