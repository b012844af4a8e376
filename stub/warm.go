package stub

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A warm supervisor is a supervisor process started before any job needs
// it: it has paid for exec and the Go runtime's start (about 6 ms of a
// 20 MB binary here) and waits, blocked on a pipe, for the directory of
// the attempt it is to supervise. A Start hands it the directory and only
// waits for the job's fork; the next warm supervisor starts in the
// background. A warm supervisor whose pipe closes unused (the stub stopped
// or died) exits at once, so none outlives its stub.

// warmDir, as the value of supervisorEnv, makes a process a warm
// supervisor: it reads its directory from dirFD.
const warmDir = "-"

// dirFD is the descriptor of the pipe a warm supervisor reads its
// directory from; statusFD is the one before it.
const dirFD = 4

// warmSupervisor is a started supervisor process waiting for a directory.
type warmSupervisor struct {
	cmd    *exec.Cmd
	status *os.File      // read end of its status pipe (its fd 3)
	dir    *os.File      // write end of its directory pipe (its fd 4)
	reaped chan struct{} // closed once the process is reaped
}

// handOver gives w the attempt directory dir. The supervisor then runs
// as one the stub started cold with that directory.
func (w *warmSupervisor) handOver(dir string) error {
	_, err := w.dir.WriteString(dir + "\n")
	if cerr := w.dir.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hand attempt to warm supervisor: %w", err)
	}
	return nil
}

// discard makes an unused warm supervisor exit (end of file on its
// directory pipe) and releases the stub's ends of its pipes.
func (w *warmSupervisor) discard() {
	_ = w.dir.Close()
	_ = w.status.Close()
}

// warmPool keeps at most one warm supervisor ready for a runner.
type warmPool struct {
	root string // the attempts directory: the warm supervisors' cwd

	mu      sync.Mutex // guards ready, filling and closed
	ready   *warmSupervisor
	filling bool
	closed  bool
}

// take returns the ready warm supervisor, or nil when there is none.
func (p *warmPool) take() *warmSupervisor {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.ready
	p.ready = nil
	return w
}

// refill starts a warm supervisor in the background unless one is ready
// or on its way. The runner calls it once a start is done, so that the
// successor's exec does not compete with that start for the CPU.
func (p *warmPool) refill() {
	p.mu.Lock()
	if p.closed || p.ready != nil || p.filling {
		p.mu.Unlock()
		return
	}
	p.filling = true
	p.mu.Unlock()
	go func() {
		w, err := startWarm(p.root)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.filling = false
		if err != nil {
			return // the next start goes cold, and tries again
		}
		if p.closed {
			w.discard()
			return
		}
		p.ready = w
	}()
}

// close discards the ready warm supervisor and starts no more.
func (p *warmPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.ready != nil {
		p.ready.discard()
		p.ready = nil
	}
}

// startWarm starts a warm supervisor with cwd root.
func startWarm(root string) (*warmSupervisor, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("start warm supervisor: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start warm supervisor: %w", err)
	}
	dirR, dirW, err := os.Pipe()
	if err != nil {
		_ = statusR.Close()
		_ = statusW.Close()
		return nil, fmt.Errorf("start warm supervisor: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{"netmgr", "supervise", "--warm"},
		Env:         []string{supervisorEnv + "=" + warmDir},
		Dir:         root,
		ExtraFiles:  []*os.File{statusW, dirR}, // fd 3 and 4
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	_ = statusW.Close()
	_ = dirR.Close()
	if err != nil {
		_ = statusR.Close()
		_ = dirW.Close()
		return nil, fmt.Errorf("start warm supervisor: %w", err)
	}
	w := &warmSupervisor{cmd: cmd, status: statusR, dir: dirW, reaped: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(w.reaped)
	}()
	return w, nil
}

// errUnused means a warm supervisor's stub closed its pipe without giving
// it an attempt.
var errUnused = errors.New("warm supervisor not used")

// awaitDir is the warm supervisor's side: it waits for its directory on
// dirFD, then sends its stdout and stderr to the directory's log, as the
// stub does for a supervisor it starts cold. Only a missing directory is
// an error: without its log the supervisor still runs and reports.
func awaitDir() (string, error) {
	f := os.NewFile(dirFD, "dir")
	if f == nil {
		return "", errors.New("warm supervisor: no directory pipe")
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return "", errUnused
	}
	dir := strings.TrimSuffix(line, "\n")
	if logf, err := os.OpenFile(filepath.Join(dir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		_ = unix.Dup2(int(logf.Fd()), 1)
		_ = unix.Dup2(int(logf.Fd()), 2)
		_ = logf.Close()
	}
	return dir, nil
}
