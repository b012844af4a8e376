package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exec is a command run inside a running attempt (netmgr shell): in its
// working directory, with its environment, user and cgroup, connected to
// a session's Stdio. It ends with the command, and is killed with the
// job: it is in the job's cgroup, or, without one, an orphan-like child of
// the supervisor whose environment names the attempt.
type Exec struct {
	// Path is the command, looked up in the attempt's PATH when it has
	// no slash; "" runs the login shell of the job's user (its SHELL, else
	// /bin/sh). Args are its arguments after argv[0].
	Path  string   `json:"path,omitempty"`
	Args  []string `json:"args,omitempty"`
	Stdio *Stdio   `json:"stdio"`
}

// opExec runs an Exec in an attempt: answered with an execReply once it
// runs (or could not start) and another once it has ended.
const opExec = "exec"

// execReply answers an exec: first its PID (or Error), then its Result.
type execReply struct {
	PID    int     `json:"pid,omitempty"`
	Error  string  `json:"error,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// Exec runs e in the running attempt of supervisor directory dir and
// returns the command's pid and a channel that brings its result once it
// has ended (closed without one if the supervisor goes first).
func (c *Client) Exec(ctx context.Context, dir string, e Exec) (int, <-chan Result, error) {
	conn, err := dialSupervisor(ctx, dir)
	if err != nil {
		return 0, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(requestTimeout))
	if err := json.NewEncoder(conn).Encode(request{Op: opExec, Dir: dir, Exec: &e}); err != nil {
		_ = conn.Close()
		return 0, nil, fmt.Errorf("exec in %s: %w", filepath.Base(dir), err)
	}
	dec := json.NewDecoder(conn)
	var first execReply
	if err := dec.Decode(&first); err != nil {
		_ = conn.Close()
		return 0, nil, fmt.Errorf("exec in %s: %w", filepath.Base(dir), err)
	}
	if first.Error != "" {
		_ = conn.Close()
		return 0, nil, fmt.Errorf("exec in %s: %s", filepath.Base(dir), first.Error)
	}
	_ = conn.SetDeadline(time.Time{})
	ended := make(chan Result, 1)
	go func() {
		defer conn.Close()
		defer close(ended)
		var last execReply
		if dec.Decode(&last) == nil && last.Result != nil {
			ended <- *last.Result
		}
	}()
	return first.PID, ended, nil
}

// exec runs e inside s's job and answers on conn: its pid, then its end.
func (s *attempt) exec(conn net.Conn, e *Exec) {
	reply := func(r execReply) {
		_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
		_ = json.NewEncoder(conn).Encode(r)
	}
	done, pid, err := s.startExec(e)
	if err != nil {
		reply(execReply{Error: err.Error()})
		return
	}
	reply(execReply{PID: pid})
	le := <-done
	res := Result{EndedAt: le.at.UTC()}
	if ws := le.status; ws.Signaled() {
		res.Signal = signalName(ws.Signal())
		res.ExitCode = 128 + int(ws.Signal())
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	reply(execReply{Result: &res})
}

// startExec forks e into s's job and returns where its end comes.
func (s *attempt) startExec(e *Exec) (<-chan leaderExit, int, error) {
	if e == nil || e.Stdio == nil {
		return nil, 0, errors.New("exec: no command or no session to connect it to")
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return nil, 0, errors.New("exec: the job has ended")
	}
	path, argv0 := e.Path, e.Path
	if path == "" {
		path = envValue(s.spec.Env, "SHELL")
		if path == "" {
			path = "/bin/sh"
		}
		argv0 = "-" + filepath.Base(path) // a login shell, as login starts it
	} else if !strings.Contains(path, "/") {
		p, err := lookPathIn(path, envValue(s.spec.Env, "PATH"))
		if err != nil {
			return nil, 0, err
		}
		path = p
	}
	cwd := s.spec.Dir
	if s.spec.Chdir != "" {
		cwd = s.spec.Chdir
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{argv0}, e.Args...),
		Dir:         cwd,
		Env:         s.spec.Env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if c := s.spec.Cred; c != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	files, err := e.Stdio.connect(cmd, s.dir)
	if err != nil {
		return nil, 0, err
	}
	defer closeAll(files)
	if s.cg != nil {
		fd, err := os.Open(s.cg.dir)
		if err != nil {
			return nil, 0, fmt.Errorf("exec: the job's cgroup: %w", err)
		}
		defer fd.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(fd.Fd())
	}
	done := make(chan leaderExit, 1)
	if err := s.host.forkExec(cmd, s.v1, done); err != nil {
		return nil, 0, fmt.Errorf("exec %s: %w", path, err)
	}
	s.log.Info("command started in the job", "path", path, "pid", cmd.Process.Pid)
	return done, cmd.Process.Pid, nil
}

// envValue is name's value in env, "" if unset.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// lookPathIn finds an executable name in the directories of path.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: %w", name, exec.ErrNotFound)
}

// forkExec starts cmd, a command run inside a job (in its v1 cgroups
// v1, if any), and registers it so that the reaper hands its exit status
// to done.
func (h *host) forkExec(cmd *exec.Cmd, v1 *jobCgroupsV1, done chan leaderExit) error {
	h.forkMu.Lock()
	defer h.forkMu.Unlock()
	if err := v1.start(cmd); err != nil {
		return err
	}
	h.execs[cmd.Process.Pid] = done
	return nil
}
