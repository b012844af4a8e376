package stub

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"time"

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

// supRequest is one request on a supervisor socket: a JSON line, one per
// connection. On the socket of a supervisor host, Dir names the attempt.
type supRequest struct {
	Op      string `json:"op"`
	Dir     string `json:"dir,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	GraceMS int64  `json:"grace_ms,omitempty"`
	// Spec is what a start asks the host to run: no spec.json is written
	// for it (each new file costs the machine about a millisecond here).
	Spec *supervisorSpec `json:"spec,omitempty"`
}

// supResponse answers a supRequest.
type supResponse struct {
	Error  string            `json:"error,omitempty"`
	Result *supervisorResult `json:"result,omitempty"`
}

// serve answers the stub on ln until ln is closed.
func (s *supervisor) serve(ln *net.UnixListener) {
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.handle(conn) })
	}
}

// handle answers one request.
func (s *supervisor) handle(conn *net.UnixConn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	var req supRequest
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		return
	}
	s.answer(conn, req)
}

// answer answers a signal or wait request on conn.
func (s *supervisor) answer(conn *net.UnixConn, req supRequest) {
	var resp supResponse
	switch req.Op {
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
func (s *supervisor) signal(sig unix.Signal, grace time.Duration) error {
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
func (s *supervisor) signalLocked(sig unix.Signal) error {
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
func (s *supervisor) killAfter(grace time.Duration) {
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
func (s *supervisor) armLimits() {
	if s.lim.run > 0 {
		s.wg.Go(s.enforceRunLimit)
	}
	if s.lim.memKB > 0 {
		s.wg.Go(s.enforceMemLimit)
	}
	if s.spec.LeaseFile != "" {
		s.wg.Go(s.enforceLease)
	}
	s.wg.Go(s.forwardTerm)
}

// enforceRunLimit sends SIGTERM to the job when its run limit passes and,
// if it still runs the grace later, SIGKILL. It returns as soon as the job
// ends.
func (s *supervisor) enforceRunLimit() {
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
		grace = defaultLimitGrace
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
func (s *supervisor) enforceMemLimit() {
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

// endForLimit sends sig, then SIGCONT (so that a job stopped by netmgr
// suspend receives it), to the job and records reason unless an earlier
// limit recorded one. It returns false, doing nothing, once the job has
// ended.
func (s *supervisor) endForLimit(sig unix.Signal, reason string) bool {
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
// job, with SIGKILL defaultLimitGrace later; the supervisor stays to
// report the end.
func (s *supervisor) forwardTerm() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, unix.SIGTERM, unix.SIGINT)
	defer signal.Stop(c)
	for {
		select {
		case sig := <-c:
			if us, ok := sig.(unix.Signal); ok {
				_ = s.signal(us, defaultLimitGrace)
			}
		case <-s.exited:
			return
		}
	}
}
