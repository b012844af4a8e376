package stub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"github.com/netmgr/netmgr/internal/beneath"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// A Start on the stub, top to bottom: the handler (http_starts.go,
// handleStarts; http.go, startOne) checks the lease and calls
// runner.start, which claims the attempt, prepares its exec dir and its
// supervisor.Spec (runner.spec), has the supervisor host fork the job
// (supervisors.Start: supervisor.Client.Start, which the host answers in
// supervisor/server.go, forking in supervisor/host.go), records the
// attempt in the outbox, answers its CHILD_REGISTER and starts watching
// for the job's end (runner.go).

// errStartFailed answers a repeated Start that came while the first
// Start of the same attempt was failing.
var errStartFailed = errors.New("an earlier Start of it failed; send it again")

// start starts an attempt unless it is known, and returns whether it
// started it now, and its CHILD_REGISTER for the answer. A failed exec is
// no error: it is recorded as a CHILD_TERM, and there is no REGISTER.
// start returns once the attempt record is durable.
//
// The REGISTER is not recorded in the outbox: the attempt record alone
// makes the start durable, and says so (RegisterAnswered) so that the
// CHILD_TERM goes with a REGISTER before it. A repeated Start of an
// attempt a supervisor runs or ran gets the REGISTER again.
func (r *runner) start(req client.StartRequest) (bool, *client.ChildEvent, error) {
	k := client.AttemptRef{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false, nil, ErrShuttingDown
	}
	if a, ok := r.attempts[k]; ok {
		r.mu.Unlock()
		reg, err := r.registerOf(k, a)
		return false, reg, err
	}
	a := &attempt{ready: make(chan struct{}), dir: r.supDir(k), restartable: req.Restartable, ownerPolicy: req.OwnerPolicy}
	if req.ExclusiveCPUs && req.CPUs > 0 {
		a.cpus = r.pickCPUs(req.CPUs)
	}
	r.attempts[k] = a
	r.mu.Unlock()
	defer close(a.ready)

	at := time.Now().UTC()
	if p := r.health.problem(); p != "" {
		// The leader has not heard yet that the machine drains itself.
		started, err := r.recordExecFailure(k, a, at, "", errors.New("not started: "+p), true)
		return started, nil, err
	}
	execDir := r.attemptDir(k)
	spec, made, err := r.spec(k, execDir, req)
	spec.CPUSet = cpuList(a.cpus)
	if err != nil {
		fault := errors.Is(err, errMachineFault)
		if fault && !errors.Is(err, errExecDirExists) {
			r.health.createFailed(err)
		}
		if !made {
			// None, or not this stub's: it stays, and is never removed.
			execDir = ""
		}
		started, err := r.recordExecFailure(k, a, at, execDir, err, fault)
		return started, nil, err
	}
	if err := r.scripts.runPrologue(r.ctx, r.machine, scriptAttempt{k: k, jobName: req.JobName, owner: req.Owner, execDir: execDir}); err != nil {
		if r.ctx.Err() != nil {
			// Interrupted by the stub's stop: nothing ran, and the
			// repeated Start runs it on the next stub.
			_ = os.RemoveAll(execDir)
			r.forget(k)
			return false, nil, ErrShuttingDown
		}
		// The machine's fault, as Slurm takes a failed Prolog: it drains,
		// and the instance goes back to the queue without counting.
		r.health.scriptFailed(err.Error())
		started, err := r.recordExecFailure(k, a, at, execDir, err, true)
		return started, nil, err
	}
	js, err := r.openSession(k, a.dir, req, &spec)
	if err != nil {
		started, err := r.recordExecFailure(k, a, at, execDir, err, errors.Is(err, errMachineFault))
		return started, nil, err
	}
	st, err := r.sup.Start(a.dir, spec)
	if js != nil && (err != nil || st.Error != "") {
		js.abort()
	}
	if errors.Is(err, supervisor.ErrFiles) {
		// Its supervisor directory could not be made: nothing runs.
		_ = os.RemoveAll(a.dir)
		r.health.createFailed(err)
		started, err := r.recordExecFailure(k, a, at, execDir, err, true)
		return started, nil, err
	}
	if err != nil {
		if errors.Is(err, supervisor.ErrClosed) {
			err = ErrShuttingDown
		}
		_ = os.RemoveAll(a.dir)
		_ = os.RemoveAll(execDir) // the repeated Start makes it again
		r.forget(k)
		return false, nil, err
	}
	if st.Error != "" {
		if st.Fault {
			r.health.createFailed(errors.New(st.Error))
		}
		started, err := r.recordExecFailure(k, a, at, execDir, errors.New(st.Error), st.Fault)
		return started, nil, err
	}
	rec := outbox.Record{PID: st.PID, At: at, Restartable: req.Restartable, OwnerPolicy: req.OwnerPolicy, RegisterAnswered: true, ExecDir: execDir,
		JobName: req.JobName, Owner: req.Owner, CopyOut: req.CopyOut, CopyOutMax: req.CopyOutMax,
		Checkpoint: req.Checkpoint, CheckpointExit: req.CheckpointExit, CheckpointSignal: req.CheckpointSignal, GraceMS: req.GraceMS}
	reg := r.register(k, rec)
	if err := r.out.Record(k, &rec); err != nil {
		// Not durable, so not started: undo, and let the caller retry.
		if err := r.sup.Signal(context.Background(), a.dir, unix.SIGKILL, 0); err != nil {
			r.log.Error("undo attempt", "attempt", k, "err", err)
		}
		st.Settle()
		_ = os.RemoveAll(a.dir)
		_ = os.RemoveAll(execDir)
		r.forget(k)
		return false, nil, err
	}
	r.mu.Lock()
	a.rec, a.supervised, a.pgid, a.ended = rec, true, st.PID, st.Ended
	r.mu.Unlock()
	r.log.Info("attempt started", "attempt", k, "binary", req.Binary, "pid", st.PID)
	if js != nil {
		if st.Stdio {
			js.started()
		} else {
			r.log.Warn("the supervisor host predates sessions: the job runs without its terminal", "attempt", k)
			js.abort()
		}
	}
	r.watch(k, a)
	return true, &reg, nil
}

// openSession makes the session of attempt k when req asks for an
// interactive job (session.EnvVar) and connects spec to it; nil when it
// does not.
func (r *runner) openSession(k client.AttemptRef, dir string, req client.StartRequest, spec *supervisor.Spec) (*jobSession, error) {
	mode, _, ok, err := session.FromEnv(req.Env)
	if !ok {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("start an interactive job: %w", err)
	}
	js, stdio, err := r.sessions.open(k, "", dir, req.Owner, mode, spec.Cred)
	if err != nil {
		return nil, err
	}
	spec.Stdio = stdio
	return js, nil
}

// registerOf returns the CHILD_REGISTER of attempt a, known already, once
// its first Start has decided what happened; nil when no supervisor ran it
// (its exec failed). Should that first Start have failed, so that nothing
// runs and the attempt is forgotten, it fails too: the server sends the
// Start again, and that one starts the attempt.
func (r *runner) registerOf(k client.AttemptRef, a *attempt) (*client.ChildEvent, error) {
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

// errMachineFault marks a failure to start an attempt that is the
// machine's, not the job's: its directory or output files could not be
// made.
var errMachineFault = errors.New("machine fault")

// recordExecFailure records that attempt k could not be started; fault
// says it is the machine's fault, not the job's, so that the servers
// queue the instance again without counting it. execDir is the exec dir
// the stub made for it ("" for none), removed after the exec retention.
func (r *runner) recordExecFailure(k client.AttemptRef, a *attempt, at time.Time, execDir string, cause error, fault bool) (bool, error) {
	r.log.Warn("attempt failed to start", "attempt", k, "err", cause, "machine_fault", fault)
	ev := r.event(k, client.ChildTerm, at)
	ev.ExitCode = supervisor.ExecFailedCode
	ev.Error = cause.Error()
	ev.MachineFault = fault
	rec := outbox.Record{At: at, Ended: true, EndedAt: time.Now().UTC(), ExecDir: execDir}
	if err := r.out.Record(k, &rec, ev); err != nil {
		r.forget(k)
		return false, err
	}
	r.mu.Lock()
	a.rec = rec
	r.mu.Unlock()
	return true, nil
}

// spec prepares what the supervisor of attempt k runs: the exec dir dir
// (new, with empty output files, given to the owner), the credentials,
// the environment, the binary's path and the limits. Its bool reports that
// dir is there, made by it, also when it fails.
func (r *runner) spec(k client.AttemptRef, dir string, req client.StartRequest) (supervisor.Spec, bool, error) {
	cred, err := credential(req.Owner)
	if err != nil {
		return supervisor.Spec{}, false, err
	}
	// A kit comes with its stdout and stderr; a directory made here
	// gets them now. Neither ever takes a directory that exists.
	if !r.execKits.take(dir) {
		if err := makeExecDir(dir); err != nil {
			return supervisor.Spec{}, false, fmt.Errorf("%w: %w", errMachineFault, err)
		}
	}
	acct, err := account(req.Owner, cred)
	if err != nil {
		return supervisor.Spec{}, true, err
	}
	if req.CopyInBlob != "" {
		if err := r.copyIn(r.ctx, req, dir); err != nil {
			return supervisor.Spec{}, true, err
		}
	}
	if req.CheckpointBlob != "" {
		if err := r.restoreCheckpoint(r.ctx, k, req, dir); err != nil {
			return supervisor.Spec{}, true, err
		}
	}
	env := r.environ(k, req, acct)
	gang, err := gangEnviron(k, req, dir)
	if err != nil {
		return supervisor.Spec{}, true, fmt.Errorf("%w: %w", errMachineFault, err)
	}
	env = gpuEnviron(append(env, gang...), req.GPUs, r.hasGPUs)
	path := req.Binary
	if req.CopyInBlob != "" && strings.Contains(path, "/") && !filepath.IsAbs(path) {
		path = filepath.Join(dir, path) // sent with the job: in the exec dir, whatever --chdir says
	}
	if !strings.Contains(req.Binary, "/") {
		if path, err = lookPath(req.Binary, env); err != nil {
			return supervisor.Spec{}, true, err
		}
	}
	spec := supervisor.Spec{
		Key:   k.String(),
		Path:  path,
		Args:  append([]string{req.Binary}, req.Args...),
		Dir:   dir,
		Env:   env,
		Chdir: req.Dir,

		Restartable: req.Restartable,
	}
	setLimits(&spec, req)
	if req.Restartable {
		spec.LeaseFile = supervisor.LeasePath(r.dataDir)
	}
	if r.cgroups != "" {
		spec.Cgroup = filepath.Join(r.cgroups, k.String())
	}
	spec.CgroupsV1 = r.enforce.v1Dirs(k.String(), req, r.hasGPUs)
	if r.hasGPUs && r.enforce.gpusFenced {
		spec.FenceGPUs, spec.GPUs = true, slices.Clone(req.GPUs)
	}
	if cred != nil {
		if err := chownAll(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return supervisor.Spec{}, true, fmt.Errorf("%w: %w", errMachineFault, err)
		}
		spec.Cred = &supervisor.Cred{UID: cred.Uid, GID: cred.Gid, Groups: cred.Groups}
	}
	return spec, true, nil
}

// setLimits puts the limits req asks for in spec: none where req sets
// none (or a negative one), supervisor.DefaultLimitGrace as the grace when
// it sets none, and the job's warning signal when a run limit applies. The supervisor enforces them, so they hold
// while no stub runs.
func setLimits(spec *supervisor.Spec, req client.StartRequest) {
	spec.GraceMS = supervisor.DefaultLimitGrace.Milliseconds()
	if req.MaxRunSeconds > 0 {
		spec.RunMS = (time.Duration(req.MaxRunSeconds) * time.Second).Milliseconds()
	}
	if req.GraceMS > 0 {
		spec.GraceMS = req.GraceMS
	}
	if req.MaxMemMB > 0 {
		spec.MemKB = req.MaxMemMB * 1024
	}
	if req.CPUs > 0 {
		spec.CPUs = req.CPUs
	}
	if req.DiskMB > 0 {
		spec.DiskKB = req.DiskMB * 1024
	}
	if req.WarnSignal != "" && spec.RunMS > 0 && req.WarnLeadMS > 0 {
		// The server checked the name; one this stub does not know
		// warns of nothing rather than refuse the job.
		if sig, err := parseSignal(req.WarnSignal); err == nil {
			spec.WarnSignal, spec.WarnLeadMS = int(sig), req.WarnLeadMS
		}
	}
}

// environ is the request's environment plus the NETMGR_ variables, the
// stub's PATH when the request sets none, and HOME, USER, LOGNAME and
// SHELL of acct, the account the job runs as, for each the request does
// not set.
func (r *runner) environ(k client.AttemptRef, req client.StartRequest, acct userAccount) []string {
	_, env, _, _ := session.FromEnv(req.Env) // the session's settings are the stub's
	env = append([]string(nil), env...)
	set := make(map[string]bool, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	for _, d := range []struct{ name, value string }{
		{"PATH", os.Getenv("PATH")},
		{"HOME", acct.home},
		{"USER", acct.name},
		{"LOGNAME", acct.name},
		{"SHELL", acct.shell},
	} {
		if !set[d.name] && d.value != "" {
			env = append(env, d.name+"="+d.value)
		}
	}
	return append(env,
		"NETMGR_JOB_ID="+strconv.FormatUint(k.JobID, 10),
		"NETMGR_JOB_NAME="+req.JobName,
		"NETMGR_INSTANCE="+strconv.Itoa(k.Instance),
		"NETMGR_ATTEMPT="+strconv.FormatUint(k.Attempt, 10),
		"NETMGR_MACHINE="+r.machine,
	)
}

// makeExecDir makes the exec dir dir, which must not exist (its parent
// does), with its stdout and stderr: a directory that exists already is
// another's, and fails with errExecDirExists rather than be written to.
func makeExecDir(dir string) error {
	// The cluster's directory, made at start, may have been removed
	// since (a cleaner of /tmp, a file system mounted over the exec dir).
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("make exec dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("make exec dir %s: %w", dir, errExecDirExists)
		}
		return fmt.Errorf("make exec dir: %w", err)
	}
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			_ = os.RemoveAll(dir) // its own, just made
			return fmt.Errorf("open %s: %w", name, err)
		}
		_ = f.Close()
	}
	return nil
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

// chownAll gives dir and everything in it (copy_in's subdirectories
// too) to uid:gid, through beneath: a copy_in's links are given, never
// followed.
func chownAll(dir string, uid, gid int) error {
	d, err := beneath.Open(dir)
	if err != nil {
		return fmt.Errorf("chown exec dir: %w", err)
	}
	defer d.Close()
	if err := d.ChownAll(".", uid, gid); err != nil {
		return fmt.Errorf("chown exec dir: %w", err)
	}
	return nil
}
