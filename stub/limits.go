package stub

import (
	"errors"
	"fmt"
	"time"

	"github.com/netmgr/netmgr/client"
	"golang.org/x/sys/unix"
)

// defaultLimitGrace is the time between the SIGTERM and the SIGKILL of a
// run limit when the StartRequest's GraceMS is 0.
const defaultLimitGrace = 10 * time.Second

// limits are the queue limits of one attempt, from its StartRequest. They
// are fixed when the attempt starts.
type limits struct {
	// run is the wall time from the attempt's start, time the group spends
	// stopped (netmgr suspend) included, after which the group gets
	// SIGTERM; 0 means no run limit.
	run time.Duration
	// grace is the time from that SIGTERM to the SIGKILL.
	grace time.Duration
	// memKB is the group's resident memory (sum of RSS) above which it is
	// SIGKILLed at once; 0 means no memory limit.
	memKB int64
}

// limitsOf returns the limits a StartRequest asks for.
func limitsOf(req client.StartRequest) limits {
	l := limits{grace: defaultLimitGrace}
	if req.MaxRunSeconds > 0 {
		l.run = time.Duration(req.MaxRunSeconds) * time.Second
	}
	if req.GraceMS > 0 {
		l.grace = time.Duration(req.GraceMS) * time.Millisecond
	}
	if req.MaxMemMB > 0 {
		l.memKB = req.MaxMemMB * 1024
	}
	return l
}

// runLimitReason is the CHILD_TERM Reason of an attempt ended by its run
// limit, e.g. "run limit of 3m20s exceeded".
func runLimitReason(run time.Duration) string {
	return fmt.Sprintf("run limit of %s exceeded", run)
}

// memLimitReason is the CHILD_TERM Reason of an attempt ended by its
// memory limit, e.g. "memory limit of 20 MB exceeded (resident 23 MB)".
// The resident size is rounded up, so it always reads above the limit.
func memLimitReason(limitKB, residentKB int64) string {
	return fmt.Sprintf("memory limit of %d MB exceeded (resident %d MB)", limitKB/1024, (residentKB+1023)/1024)
}

// armLimits starts enforcing a's limits; started is when its process
// started. The caller holds r.mu and has just made a supervised. A closed
// runner arms nothing: after Shutdown running jobs are left alone.
func (r *runner) armLimits(k attemptKey, a *attempt, started time.Time) {
	if r.closed {
		return
	}
	if a.limits.memKB > 0 {
		r.memLimited[k] = a
	}
	if a.limits.run > 0 {
		deadline := started.Add(a.limits.run)
		r.timers.Go(func() { r.enforceRunLimit(k, a, deadline) })
	}
}

// enforceRunLimit waits until deadline, then sends SIGTERM to the
// attempt's group and, if it is still alive a.limits.grace later, SIGKILL.
// It returns as soon as the attempt ends or the runner closes.
func (r *runner) enforceRunLimit(k attemptKey, a *attempt, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-t.C:
	case <-a.done:
		return
	case <-r.stop:
		return
	}
	if !r.endForLimit(k, a, unix.SIGTERM, runLimitReason(a.limits.run)) {
		return
	}
	t.Reset(a.limits.grace)
	select {
	case <-t.C:
	case <-a.done:
		return
	case <-r.stop:
		return
	}
	r.endForLimit(k, a, unix.SIGKILL, runLimitReason(a.limits.run))
}

// endForLimit sends sig, then SIGCONT (so that a group stopped by netmgr
// suspend receives it), to the attempt's process group and records reason
// as the attempt's Reason unless an earlier limit recorded one. It returns
// false, doing nothing, when the attempt has already ended. It takes r.mu,
// held across the kill so the group cannot be reaped meanwhile.
func (r *runner) endForLimit(k attemptKey, a *attempt, sig unix.Signal, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endForLimitLocked(k, a, sig, reason)
}

// endForLimitLocked is endForLimit for a caller holding r.mu.
func (r *runner) endForLimitLocked(k attemptKey, a *attempt, sig unix.Signal, reason string) bool {
	if a.exited {
		return false
	}
	if a.reason == "" {
		a.reason = reason
	}
	if err := unix.Kill(-a.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		r.log.Warn("signal attempt for its limit", "attempt", k, "signal", signalName(sig), "err", err)
	}
	_ = unix.Kill(-a.pgid, unix.SIGCONT)
	r.log.Info("attempt signalled for its limit", "attempt", k, "signal", signalName(sig), "reason", reason)
	return true
}
