package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"golang.org/x/sys/unix"
)

// requestTimeout bounds how long a supervisor waits for a request on a new
// connection, and how long the stub waits for the answer to a signal.
const requestTimeout = 10 * time.Second

// Operations of the supervisor socket.
const (
	opSignal = "signal" // signal the job; answered at once
	opWait   = "wait"   // answered with the result once the job has ended
)

// request is one request on a supervisor socket: a JSON line, one per
// connection. On the socket of a supervisor host, Dir names the attempt.
type request struct {
	Op      string `json:"op"`
	Dir     string `json:"dir,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	GraceMS int64  `json:"grace_ms,omitempty"`
	// Spec is what a start asks the host to run: no spec.json is written
	// for it (each new file costs the machine about a millisecond here).
	Spec *Spec `json:"spec,omitempty"`
	// Exec is what an exec runs in the attempt (exec.go).
	Exec *Exec `json:"exec,omitempty"`
}

// response answers a request.
type response struct {
	Error  string  `json:"error,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// serve answers the stub on ln until ln is closed.
func (s *attempt) serve(ln *net.UnixListener) {
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.handle(conn) })
	}
}

// handle answers one request.
func (s *attempt) handle(conn *net.UnixConn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	var req request
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		return
	}
	s.answer(conn, req)
}

// answer answers a signal or wait request on conn.
func (s *attempt) answer(conn *net.UnixConn, req request) {
	var resp response
	switch req.Op {
	case opExec:
		_ = conn.SetReadDeadline(time.Time{})
		s.exec(conn, req.Exec)
		return
	case opSignal:
		if err := s.signal(unix.Signal(req.Signal), time.Duration(req.GraceMS)*time.Millisecond); err != nil {
			resp.Error = err.Error()
		}
	case opWait:
		<-s.resultc
		resp.Result = &s.result
	default:
		resp.Error = fmt.Sprintf("unknown operation %q", req.Op)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
	_ = json.NewEncoder(conn).Encode(resp)
}

// signal sends sig to the job and, when grace is positive, SIGKILL after
// grace if the job still runs. A job whose first process has ended is not
// signalled any more.
func (s *attempt) signal(sig unix.Signal, grace time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	if err := s.signalLocked(sig); err != nil {
		return err
	}
	if wakes(sig) {
		// A suspended (stopped) job takes the signal only once continued.
		_ = s.signalLocked(unix.SIGCONT)
	}
	s.log.Info("job signalled", "signal", signalName(sig), "grace", grace)
	if grace > 0 && sig != unix.SIGKILL {
		s.wg.Go(func() { s.killAfter(grace) })
	}
	return nil
}

// signalLocked sends sig to the job's process group and cgroup; the caller
// holds s.mu and has checked that the job's first process has not been
// waited for, so its process group still exists.
func (s *attempt) signalLocked(sig unix.Signal) error {
	var errs []error
	if err := unix.Kill(-s.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		errs = append(errs, fmt.Errorf("signal process group %d: %w", s.pgid, err))
	}
	if s.cg != nil {
		errs = append(errs, s.cg.signal(sig))
	}
	return errors.Join(errs...)
}

// killAfter SIGKILLs the job after grace unless it ended first.
func (s *attempt) killAfter(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.exited:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && s.signalLocked(unix.SIGKILL) == nil {
		_ = s.signalLocked(unix.SIGCONT)
		s.log.Info("job killed after grace", "grace", grace)
	}
}

// armLimits starts enforcing the job's queue limits.
func (s *attempt) armLimits() {
	if s.lim.run > 0 {
		s.wg.Go(s.enforceRunLimit)
	}
	if s.lim.memKB > 0 {
		s.wg.Go(s.enforceMemLimit)
	}
	if s.lim.diskKB > 0 {
		s.wg.Go(s.enforceDiskLimit)
	}
	if s.spec.LeaseFile != "" {
		s.wg.Go(s.enforceLease)
	}
	s.wg.Go(s.forwardTerm)
}

// enforceRunLimit sends the job its warning signal, if it asks one, its
// lead before the run limit; SIGTERM when the limit passes and, if it
// still runs the grace later, SIGKILL. It returns as soon as the job
// ends.
func (s *attempt) enforceRunLimit() {
	if s.lim.warn != 0 {
		w := time.NewTimer(time.Until(s.started.Add(max(s.lim.run-s.lim.lead, 0))))
		select {
		case <-w.C:
			s.warn()
		case <-s.exited:
			w.Stop()
			return
		}
	}
	t := time.NewTimer(time.Until(s.started.Add(s.lim.run)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.exited:
		return
	}
	if !s.endForLimit(unix.SIGTERM, runLimitReason(s.lim.run)) {
		return
	}
	grace := s.lim.grace
	if grace <= 0 {
		grace = DefaultLimitGrace
	}
	t.Reset(grace)
	select {
	case <-t.C:
	case <-s.exited:
		return
	}
	s.endForLimit(unix.SIGKILL, runLimitReason(s.lim.run))
}

// enforceMemLimit measures the job's resident memory every memInterval,
// keeps its peak and SIGKILLs the job at once above its limit: a memory
// hog is given no time to grow.
func (s *attempt) enforceMemLimit() {
	if s.host.fsErr != nil {
		s.log.Warn("cannot measure the job's memory; its memory limit is not enforced", "err", s.host.fsErr)
		return
	}
	t := time.NewTicker(memInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-t.C:
		case <-s.exited:
			return
		}
		var kb int64
		var err error
		if s.cg != nil {
			kb, err = s.cg.residentKB(s.host.fs)
		} else {
			kb, err = groupRSS(s.host.fs, s.pgid)
		}
		if err != nil {
			if !warned {
				s.log.Warn("cannot measure the job's memory", "err", err)
				warned = true
			}
			continue
		}
		s.mu.Lock()
		s.peakKB = max(s.peakKB, kb)
		s.mu.Unlock()
		if kb > s.lim.memKB {
			s.endForLimit(unix.SIGKILL, memLimitReason(s.lim.memKB, kb))
			return
		}
	}
}

// enforceLease stops the job when the stub's lease runs out: it SIGKILLs
// it, with the lease as the reason. Without a lease file (a stub that
// never got a lease since the file's directory was made) it assumes a
// lease granted when the job started, as the stub does.
func (s *attempt) enforceLease() {
	fallback := BootNow() + DefaultLease
	t := time.NewTicker(leaseCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.exited:
			return
		case <-t.C:
		}
		deadline := fallback
		var rec leaseRecord
		switch err := readJSONFile(s.spec.LeaseFile, &rec); {
		case err == nil:
			deadline = time.Duration(rec.ValidUntilBootNS)
		case !errors.Is(err, fs.ErrNotExist):
			s.log.Warn("cannot read the lease file; keeping the last deadline", "err", err)
			continue
		}
		if BootNow() >= deadline {
			s.endForLimit(unix.SIGKILL, client.ReasonLeaseExpired)
			return
		}
	}
}

// warn sends the job its warning signal, unless it has ended. A job
// stopped by netmgr suspend stays stopped: the signal waits for its
// resume, as any signal to a stopped process does.
func (s *attempt) warn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if err := s.signalLocked(s.lim.warn); err != nil {
		s.log.Warn("send the job its warning", "signal", signalName(s.lim.warn), "err", err)
		return
	}
	s.log.Info("job warned before its time limit", "signal", signalName(s.lim.warn), "lead", s.lim.lead)
}

// endForLimit sends sig, then SIGCONT (so that a job stopped by netmgr
// suspend receives it), to the job and records reason unless an earlier
// limit recorded one. It returns false, doing nothing, once the job has
// ended.
func (s *attempt) endForLimit(sig unix.Signal, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	if s.reason == "" {
		s.reason = reason
	}
	if err := s.signalLocked(sig); err != nil {
		s.log.Warn("signal the job for its limit", "signal", signalName(sig), "err", err)
	}
	_ = s.signalLocked(unix.SIGCONT)
	s.log.Info("job signalled for its limit", "signal", signalName(sig), "reason", reason)
	return true
}

// forwardTerm passes a SIGTERM or SIGINT sent to the supervisor on to the
// job, with SIGKILL DefaultLimitGrace later; the supervisor stays to
// report the end.
func (s *attempt) forwardTerm() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, unix.SIGTERM, unix.SIGINT)
	defer signal.Stop(c)
	for {
		select {
		case sig := <-c:
			if us, ok := sig.(unix.Signal); ok {
				_ = s.signal(us, DefaultLimitGrace)
			}
		case <-s.exited:
			return
		}
	}
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

// signalName is the signal's name without "SIG", e.g. "TERM", as a
// Result names the signal that ended a job.
func signalName(sig unix.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}
