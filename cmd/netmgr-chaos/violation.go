package main

import (
	"fmt"
	"time"
)

// Violation kinds. lost, doubled and diverged are counted in the result
// line; the others fail the suite too.
const (
	vLost     = "lost"      // acknowledged work missing, unfinished, or recorded as done without having run
	vDoubled  = "doubled"   // an instance ran twice at once, an attempt ran twice, or work ran after it ended
	vDiverged = "diverged"  // a server's database differs from the others'
	vWorkLost = "work-lost" // more work lost than -max-work-lost allows
	// vDependency: a dependent job started before its dependency ended, ran
	// although its afterok dependency failed, or was cancelled although
	// its dependency allowed it.
	vDependency = "dependency"
	// vCron: a cron firing missed (neither run nor recorded skipped) or
	// decided twice.
	vCron   = "cron"
	vOrphan = "orphan" // a process left in a stub container
	vLedger = "ledger" // the ledger itself is damaged
	vCheck  = "check"  // the checker could not read something it judges
)

// violation is one broken rule.
type violation struct {
	Kind     string
	Job      uint64 // 0 when not about a job
	Instance int    // -1 when about the whole job or no job
	At       float64
	Detail   string
}

// String is the violation as the report prints it.
func (v violation) String() string {
	switch {
	case v.Job == 0:
		return fmt.Sprintf("%s: %s", v.Kind, v.Detail)
	case v.Instance < 0:
		return fmt.Sprintf("%s: job %d: %s", v.Kind, v.Job, v.Detail)
	}
	return fmt.Sprintf("%s: job %d instance %d: %s", v.Kind, v.Job, v.Instance, v.Detail)
}

// clock converts the servers' wall-clock times into the ledger's clock
// (seconds since boot).
type clock func(time.Time) float64
