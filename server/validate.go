package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/cron"
)

// validateSpec refuses a spec this server cannot honour. The fsm re-checks
// its own invariants; this check gives the user the clear answer.
func validateSpec(s *client.JobSpec) error {
	if err := validateFiles(s); err != nil {
		return err
	}
	if err := cron.Validate(s); err != nil {
		return err
	}
	if err := validateLimits(s); err != nil {
		return err
	}
	if s.Priority != 0 {
		return fmt.Errorf("priority=%d: only the site policy's admit sets a job's priority", s.Priority)
	}
	for _, t := range s.MailType {
		if !fsm.ValidMailType(t) {
			return fmt.Errorf("mail_type=%s: want begin, end, fail, requeue or all", t)
		}
	}
	if len(s.MailType) > 0 && s.Mail == "" {
		return fmt.Errorf("mail_type needs mail or mail=ADDRESS")
	}
	for _, r := range s.Requirements {
		switch r.Op {
		case ">", ">=", "<", "<=", "==", "!=":
		default:
			return fmt.Errorf("requirement %s%s%v: unknown comparison %q (use > >= < <= == !=)", r.Attr, r.Op, r.Value, r.Op)
		}
		if r.Attr == "" || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			return fmt.Errorf("requirement %s%s%v: needs an attribute name and a finite number", r.Attr, r.Op, r.Value)
		}
	}
	switch s.Restart {
	case "", client.RestartNo, client.RestartOnFailure, client.RestartAlways:
	default:
		return fmt.Errorf("restart=%s: want no, on-failure or always", s.Restart)
	}
	switch {
	case s.MaxRestarts < 0:
		return fmt.Errorf("max_restarts=%d: must not be negative", s.MaxRestarts)
	case s.MaxPerMachine < 0:
		return fmt.Errorf("max_per_machine=%d: must not be negative", s.MaxPerMachine)
	case s.Load < 0 || math.IsNaN(s.Load) || math.IsInf(s.Load, 0):
		return fmt.Errorf("load=%v: must be a positive number", s.Load)
	case s.MemoryMB < 0:
		return fmt.Errorf("memory=%d: must not be negative", s.MemoryMB)
	case s.CPUs < 0 || s.GPUs < 0 || s.DiskMB < 0:
		return fmt.Errorf("cpus=%d, gpus=%d, disk=%d: must not be negative", s.CPUs, s.GPUs, s.DiskMB)
	case s.GPUType != "" && s.GPUs == 0:
		return fmt.Errorf("gpus=%s:0: a GPU type needs a count of at least 1", s.GPUType)
	case badCounts(s.Gres) != "":
		return fmt.Errorf("gres=%s: needs a name and a count of at least 1", badCounts(s.Gres))
	case badCounts(s.Licenses) != "":
		return fmt.Errorf("license=%s: needs a name and a count of at least 1", badCounts(s.Licenses))
	case s.Unique && s.MaxPerMachine > 1:
		return fmt.Errorf("unique and max_per_machine=%d contradict each other", s.MaxPerMachine)
	case client.IsAutomaticName(s.Name):
		return fmt.Errorf("symb_name=%s: %w; choose another", s.Name, errAutomaticName)
	case s.Dir != "" && !strings.HasPrefix(s.Dir, "/"):
		return fmt.Errorf("dir %q: must be an absolute path", s.Dir)
	}
	return nil
}

// badCounts returns the first name of m, in name order, that is empty or
// has a count below 1, or "".
func badCounts(m map[string]int) string {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if name == "" || m[name] < 1 {
			return fmt.Sprintf("%q:%d", name, m[name])
		}
	}
	return ""
}

// validateLimits checks the job's own time limit and warning (time=,
// signal=); whether they fit its queue is the queue's to say at submit.
func validateLimits(s *client.JobSpec) error {
	if s.TimeLimitS < 0 {
		return fmt.Errorf("time=%ds: must not be negative", s.TimeLimitS)
	}
	if s.WarnSignal == "" && s.WarnLeadS == 0 {
		return nil
	}
	name, _, err := spec.ParseSignal(s.WarnSignal)
	if err != nil {
		return err
	}
	if name != s.WarnSignal || s.WarnLeadS < 1 {
		return fmt.Errorf("signal=%s@%d: want a signal's name without SIG (USR1) and a lead of at least 1 second", s.WarnSignal, s.WarnLeadS)
	}
	return nil
}
