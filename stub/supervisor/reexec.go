package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// supervisorEnv, set in a process's environment, names the supervisor
// directory of the attempt the process is to supervise.
const supervisorEnv = "NETMGR_SUPERVISOR_DIR"

// init turns the process into a supervisor when the stub started it as
// one: the stub re-executes its own binary (/proc/self/exe, which may be
// the netmgr binary, or a test binary running an in-process stub) with
// hostEnv set (its supervisor host) or supervisorEnv set (a supervisor of
// one attempt). Doing it here, before main, lets every binary that links
// the stub act as the supervisor without a hook of its own; the netmgr
// binary also offers both as `netmgr supervise` for running one by hand.
func init() {
	if root, ok := os.LookupEnv(hostEnv); ok {
		if err := RunHost(root); err != nil {
			fmt.Fprintf(os.Stderr, "netmgr supervise --host: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, ok := os.LookupEnv(supervisorEnv)
	if !ok {
		return
	}
	if err := RunAttempt(dir); err != nil {
		fmt.Fprintf(os.Stderr, "netmgr supervise: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// reexec starts this binary again (/proc/self/exe, so an upgrade of the
// file on disk does not matter) as a supervisor: in a session of its own,
// so that it outlives the stub, with working directory dir, stdout and
// stderr appended to logPath, env ("NAME=value") its only environment
// variable, and the write end of a pipe as its fd 3 (statusFD). It returns
// the process, the read end of that pipe, and a channel closed once the
// process is reaped; the goroutine that reaps it outlives the stub, as
// the process does, and a stub in a process that goes on (tests) must
// still reap it.
func reexec(logPath, dir, env string, args ...string) (*os.Process, *os.File, <-chan struct{}, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open supervisor log: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start supervisor: %w", err)
	}
	defer pw.Close()
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        append([]string{"netmgr", "supervise"}, args...),
		Env:         []string{env},
		Dir:         dir,
		Stdout:      logf,
		Stderr:      logf,
		ExtraFiles:  []*os.File{pw},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		_ = pr.Close()
		return nil, nil, nil, fmt.Errorf("start supervisor: %w", err)
	}
	reaped := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(reaped)
	}()
	return cmd.Process, pr, reaped, nil
}
