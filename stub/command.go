package stub

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/netmgr/netmgr/client"
	"golang.org/x/sys/unix"
)

// spec prepares what the supervisor of attempt k runs: the exec dir (with
// empty output files, given to the owner), the credentials, the
// environment, the binary's path and the limits.
func (r *runner) spec(k attemptKey, req client.StartRequest) (supervisorSpec, error) {
	cred, err := credential(req.Owner)
	if err != nil {
		return supervisorSpec{}, err
	}
	dir := filepath.Join(r.execDir, k.String())
	// A kit comes with its stdout and stderr; a directory made here
	// gets them now.
	if !r.execKits.take(dir) {
		if err := makeExecDir(dir); err != nil {
			return supervisorSpec{}, err
		}
	}
	env := r.environ(k, req)
	path := req.Binary
	if !strings.Contains(req.Binary, "/") {
		if path, err = lookPath(req.Binary, env); err != nil {
			return supervisorSpec{}, err
		}
	}
	lim := limitsOf(req)
	spec := supervisorSpec{
		Key:     k.String(),
		Path:    path,
		Args:    append([]string{req.Binary}, req.Args...),
		Dir:     dir,
		Env:     env,
		RunMS:   lim.run.Milliseconds(),
		GraceMS: lim.grace.Milliseconds(),
		MemKB:   lim.memKB,

		Restartable: req.Restartable,
	}
	if req.Restartable {
		spec.LeaseFile = filepath.Join(r.dataDir, leaseFile)
	}
	if r.cgroups != "" {
		spec.Cgroup = filepath.Join(r.cgroups, k.String())
	}
	if cred != nil {
		if err := chownAll(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return supervisorSpec{}, err
		}
		spec.Cred = &specCred{UID: cred.Uid, GID: cred.Gid, Groups: cred.Groups}
	}
	return spec, nil
}

// makeExecDir makes the exec dir dir, if need be, with its stdout and
// stderr.
func makeExecDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make exec dir: %w", err)
	}
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open %s: %w", name, err)
		}
		_ = f.Close()
	}
	return nil
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
