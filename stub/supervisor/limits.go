package supervisor

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultLimitGrace is the time between the SIGTERM and the SIGKILL of a
// run limit when the StartRequest's GraceMS is 0 (the stub puts it in the
// Spec), and the grace a supervisor gives a job it passes a SIGTERM on to.
const DefaultLimitGrace = 10 * time.Second

// limits are the queue limits of one attempt, from its Spec. They are
// fixed when the attempt starts and enforced by its supervisor, so they
// hold while no stub runs.
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
	// diskKB is the space the exec dir may take (its files' blocks)
	// above which the group is SIGKILLed; 0 means no disk limit.
	diskKB int64
	// warn, when not 0, is the signal the group gets lead before the run
	// limit passes (signal=SIG@LEAD); a lead longer than the run limit
	// sends it at the start.
	warn unix.Signal
	lead time.Duration
}

// The first words of the Reason of an attempt a limit ended, which
// netstatus shows as its state's detail: killed(timeout), killed(memory).
const (
	ReasonTimeout = "timeout"
	ReasonMemory  = "memory"
	ReasonDisk    = "disk"
)

// runLimitReason is the CHILD_TERM Reason of an attempt ended by its run
// limit, e.g. "timeout: run limit of 3m20s exceeded".
func runLimitReason(run time.Duration) string {
	return fmt.Sprintf("%s: run limit of %s exceeded", ReasonTimeout, run)
}

// memLimitReason is the CHILD_TERM Reason of an attempt ended by its
// memory limit, e.g. "memory: memory limit of 20 MB exceeded (resident 23
// MB)". The resident size is rounded up, so it always reads above the
// limit.
func memLimitReason(limitKB, residentKB int64) string {
	return fmt.Sprintf("%s: memory limit of %d MB exceeded (resident %d MB)", ReasonMemory, limitKB/1024, (residentKB+1023)/1024)
}
