package spec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// DefaultWarnLead is the LEAD of signal=SIG without one: the warning comes
// 60 seconds before the time limit, as Slurm's --signal sends it.
const DefaultWarnLead = 60

// maxLimitSeconds bounds time= and a warning's lead: a year, far beyond any
// run, and far from overflowing a duration in nanoseconds.
const maxLimitSeconds = 366 * 24 * 3600

// limitUnits are the units time= and a warning's lead may carry, in
// seconds; a number without a unit is minutes for time= (Slurm's --time,
// the paper's nq_maxrun) and seconds for a lead (Slurm's --signal).
var limitUnits = map[byte]int64{'s': 1, 'm': 60, 'h': 3600}

// warnSignals are the signals signal= may name, by number. KILL and STOP
// are left out: a job cannot catch them, so they warn of nothing; and CONT,
// which would resume a job suspended for its machine's owner.
var warnSignals = map[int]string{
	1: "HUP", 2: "INT", 3: "QUIT", 6: "ABRT", 10: "USR1", 12: "USR2",
	14: "ALRM", 15: "TERM", 23: "URG", 24: "XCPU", 26: "VTALRM",
	27: "PROF", 28: "WINCH", 30: "PWR",
}

// ParseTimeLimit reads a time limit (time=, netexec --time): whole minutes
// ("90", Slurm's unit and the paper's nq_maxrun's) or a whole number with a
// unit s, m or h ("90s", "30m", "2h"). It returns the seconds, at least 1.
func ParseTimeLimit(v string) (int64, error) {
	n, err := parseSeconds(v, 60)
	if err != nil {
		return 0, fmt.Errorf("time limit: %w", err)
	}
	return n, nil
}

// FormatTimeLimit prints seconds as time= writes them: with the largest
// unit that divides them ("2h", "90m", "45s").
func FormatTimeLimit(secs int64) string {
	switch {
	case secs%3600 == 0:
		return strconv.FormatInt(secs/3600, 10) + "h"
	case secs%60 == 0:
		return strconv.FormatInt(secs/60, 10) + "m"
	}
	return strconv.FormatInt(secs, 10) + "s"
}

// ParseSignal reads a warning, signal=SIG@LEAD (netexec --signal), Slurm's
// form without its B: and R: prefixes: SIG is a signal's name with or
// without SIG, in any case, or its number (USR1, SIGUSR1, 10); LEAD the
// seconds before the time limit it is sent, or a whole number with a unit
// s, m or h; without "@LEAD" it is DefaultWarnLead. It returns the
// signal's name without SIG and the lead in seconds.
func ParseSignal(v string) (name string, lead int64, err error) {
	sig, leadText, hasLead := strings.Cut(strings.TrimSpace(v), "@")
	name, err = signalName(sig)
	if err != nil {
		return "", 0, err
	}
	lead = DefaultWarnLead
	if hasLead {
		if lead, err = parseSeconds(leadText, 1); err != nil {
			return "", 0, fmt.Errorf("signal %s: lead: %w", v, err)
		}
	}
	return name, lead, nil
}

// FormatSignal prints a warning as signal= writes it: "USR1@60".
func FormatSignal(name string, lead int64) string {
	return name + "@" + strconv.FormatInt(lead, 10)
}

// signalName turns "usr1", "SIGUSR1" or "10" into "USR1".
func signalName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if name, ok := warnSignals[n]; ok {
			return name, nil
		}
		return "", fmt.Errorf("signal %s: not a signal a job can be warned with (%s)", s, warnList())
	}
	up := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	for _, name := range warnSignals {
		if name == up {
			return name, nil
		}
	}
	return "", fmt.Errorf("signal %q: not a signal a job can be warned with (%s)", s, warnList())
}

// warnList lists the signals signal= takes, for messages.
func warnList() string {
	return "HUP, INT, QUIT, ABRT, USR1, USR2, ALRM, TERM, URG, XCPU, VTALRM, PROF, WINCH, PWR or their numbers"
}

// parseSeconds reads a positive whole number of bare units (in seconds)
// or a whole number with a unit s, m or h, at most a year.
func parseSeconds(v string, bare int64) (int64, error) {
	v = strings.TrimSpace(v)
	unit := bare
	if v != "" {
		if u, ok := limitUnits[v[len(v)-1]]; ok {
			unit, v = u, v[:len(v)-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || strings.HasPrefix(v, "+") || n > maxLimitSeconds/unit {
		return 0, fmt.Errorf("%q is not a whole number from 1, with an optional unit s, m or h, up to a year", v)
	}
	return n * unit, nil
}

// validateLimits checks time= and signal= of a spec built by other means
// than Parse.
func validateLimits(s client.JobSpec) error {
	if s.TimeLimitS < 0 || s.TimeLimitS > maxLimitSeconds {
		return fmt.Errorf("option %s: %d seconds is not from 1 up to a year", optTime, s.TimeLimitS)
	}
	if s.WarnSignal == "" {
		if s.WarnLeadS != 0 {
			return fmt.Errorf("option %s: a lead without a signal", optSignal)
		}
		return nil
	}
	if _, err := signalName(s.WarnSignal); err != nil {
		return fmt.Errorf("option %s: %w", optSignal, err)
	}
	if s.WarnLeadS < 1 || s.WarnLeadS > maxLimitSeconds {
		return fmt.Errorf("option %s: lead %d seconds is not from 1 up to a year", optSignal, s.WarnLeadS)
	}
	if s.TimeLimitS > 0 && s.WarnLeadS >= s.TimeLimitS {
		return fmt.Errorf("option %s: the warning %ds before the time limit comes before the job starts (time=%s)",
			optSignal, s.WarnLeadS, FormatTimeLimit(s.TimeLimitS))
	}
	return nil
}
