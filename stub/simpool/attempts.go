package simpool

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netmgr/netmgr/client"
)

// execFailedCode is the exit code of an attempt whose binary could not be
// executed (stub/supervisor.ExecFailedCode).
const execFailedCode = 127

// endedKeep is how long an ended attempt's record is kept, so that a
// repeated Start of it is answered with its REGISTER and starts nothing.
const endedKeep = 10 * time.Minute

// attempt is one simulated attempt: no process, a timer.
type attempt struct {
	restartable bool
	register    *client.ChildEvent // nil when its exec failed
	ended       bool
	endedAt     time.Time
	reason      string      // why it is being stopped, for its TERM
	end, kill   *time.Timer // the run's end (or its run limit), the grace's SIGKILL
}

func (a *attempt) stopTimers() {
	for _, t := range []*time.Timer{a.end, a.kill} {
		if t != nil {
			t.Stop()
		}
	}
}

// start runs one Start of a batch, as the real stub's startOne does with
// a simulated supervisor.
func (m *Machine) start(req client.StartRequest) client.StartResult {
	if req.Binary == "" {
		return client.StartResult{Status: http.StatusBadRequest, Error: "start: no binary"}
	}
	if m.dead.Load() {
		return client.StartResult{Status: http.StatusServiceUnavailable, Error: "start: machine shutting down"}
	}
	k := client.AttemptRef{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.attempts[k]; a != nil {
		return client.StartResult{Status: http.StatusOK, Register: a.register}
	}
	if req.Restartable && !m.admits(req.MachineIndex) {
		return client.StartResult{Status: http.StatusConflict,
			Error: fmt.Sprintf("start attempt %d of %d/%d: lease expired: restartable work may run elsewhere", req.Attempt, req.JobID, req.Instance)}
	}
	now := time.Now()
	a := &attempt{restartable: req.Restartable}
	m.attempts[k] = a
	if err := m.pool.execError(req.Binary); err != nil {
		a.ended, a.endedAt = true, now
		m.queueLocked(client.ChildEvent{Kind: client.ChildTerm, JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
			Machine: m.name, At: now, ExitCode: execFailedCode, Error: err.Error()})
		return client.StartResult{Status: http.StatusOK, Started: true}
	}
	a.register = &client.ChildEvent{Kind: client.ChildRegister, JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
		Machine: m.name, At: now, PID: m.pool.nextPID()}
	run, code, sig, reason := m.pool.cfg.RunTime, 0, "", ""
	if limit := time.Duration(req.MaxRunSeconds) * time.Second; limit > 0 && limit < run {
		run, code, sig = limit, 128+int(unix.SIGTERM), "TERM"
		reason = fmt.Sprintf("timeout: run limit of %s exceeded", limit)
	}
	a.end = time.AfterFunc(run, func() { m.finish(k, code, sig, reason) })
	return client.StartResult{Status: http.StatusOK, Started: true, Register: a.register}
}

// finish ends attempt k with its exit code and signal: its REGISTER again
// and its TERM go to the outbox, as a stub records an attempt's end.
func (m *Machine) finish(k client.AttemptRef, code int, sig, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.attempts[k]
	if a == nil || a.ended || m.dead.Load() {
		return
	}
	a.ended, a.endedAt = true, time.Now()
	a.stopTimers()
	if a.reason != "" {
		reason = a.reason
	}
	m.queueLocked(*a.register)
	m.queueLocked(client.ChildEvent{Kind: client.ChildTerm, JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
		Machine: m.name, At: a.endedAt, ExitCode: code, Signal: sig, Reason: reason})
}

// ignored are the signals whose default disposition leaves a job running
// (a simulated job does not pause: STOP and its kin are ignored too).
var ignored = map[unix.Signal]bool{
	unix.SIGCHLD: true, unix.SIGURG: true, unix.SIGWINCH: true, unix.SIGCONT: true,
	unix.SIGSTOP: true, unix.SIGTSTP: true, unix.SIGTTIN: true, unix.SIGTTOU: true,
}

// signal signals attempt k: a signal that kills ends it at once with
// 128+signal; the others leave it running, and a grace SIGKILLs it then.
func (m *Machine) signal(k client.AttemptRef, name string, grace time.Duration) (int, error) {
	sig, err := parseSignal(name)
	if err != nil {
		return http.StatusBadRequest, err
	}
	m.mu.Lock()
	a := m.attempts[k]
	if a == nil {
		m.mu.Unlock()
		return http.StatusNotFound, fmt.Errorf("signal %s: no such attempt", k)
	}
	running := !a.ended && a.register != nil
	if running && ignored[sig] && grace > 0 && a.kill == nil {
		a.kill = time.AfterFunc(grace, func() { m.finish(k, 128+int(unix.SIGKILL), "KILL", "") })
	}
	m.mu.Unlock()
	if running && !ignored[sig] {
		m.finish(k, 128+int(sig), strings.TrimPrefix(unix.SignalName(sig), "SIG"), "")
	}
	return http.StatusOK, nil
}

// parseSignal turns "TERM", "SIGTERM", "term" or "15" into a signal;
// empty means SIGTERM.
func parseSignal(name string) (unix.Signal, error) {
	if name == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
		return unix.Signal(n), nil
	}
	up := strings.ToUpper(name)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	if s := unix.SignalNum(up); s != 0 {
		return s, nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}

// stopRestartable SIGKILLs the running restartable attempts, their
// lease having run out, and returns how many.
func (m *Machine) stopRestartable() int {
	var ks []client.AttemptRef
	m.mu.Lock()
	for k, a := range m.attempts {
		if a.restartable && !a.ended && a.register != nil {
			a.reason = client.ReasonLeaseExpired
			ks = append(ks, k)
		}
	}
	m.mu.Unlock()
	for _, k := range ks {
		m.finish(k, 128+int(unix.SIGKILL), "KILL", "")
	}
	return len(ks)
}

// running lists the attempts running now, and forgets attempts that ended
// long enough ago with nothing left to report.
func (m *Machine) running() []client.AttemptRef {
	var out []client.AttemptRef
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, a := range m.attempts {
		switch {
		case !a.ended:
			out = append(out, k)
		case now.Sub(a.endedAt) > endedKeep && len(m.outbox) == 0:
			delete(m.attempts, k)
		}
	}
	return out
}
