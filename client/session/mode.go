package session

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EnvVar is the variable of a job's environment that makes it
// interactive: the stub connects the job to a session as Mode says,
// instead of /dev/null and the output files, and takes it out of the
// environment the job gets. It rides in the spec's environment, which the
// log, the snapshots and every Start already carry, so an interactive job
// needs no new command level nor snapshot version (doc.go says more).
const EnvVar = "NETMGR_INTERACTIVE"

// DefaultGrace is how long a job keeps its session while no client is
// attached before it gets SIGHUP (netexec --detach-grace).
const DefaultGrace = 60 * time.Second

// Mode is how an interactive job is connected.
type Mode struct {
	// TTY gives the job a pseudo-terminal of Rows by Cols; otherwise its
	// stdin, stdout and stderr are pipes.
	TTY        bool
	Rows, Cols uint16
	// Grace is how long the job keeps its session with no client
	// attached; 0 ends it at once (SIGHUP).
	Grace time.Duration
}

// String is the mode as EnvVar's value: "tty ROWSxCOLS GRACE" or
// "pipes GRACE", GRACE a Go duration.
func (m Mode) String() string {
	if m.TTY {
		return fmt.Sprintf("tty %dx%d %s", m.Rows, m.Cols, m.Grace)
	}
	return "pipes " + m.Grace.String()
}

// ParseMode reads EnvVar's value.
func ParseMode(s string) (Mode, error) {
	f := strings.Fields(s)
	var m Mode
	switch {
	case len(f) == 3 && f[0] == "tty":
		r, c, ok := strings.Cut(f[1], "x")
		rows, err1 := strconv.ParseUint(r, 10, 16)
		cols, err2 := strconv.ParseUint(c, 10, 16)
		if !ok || err1 != nil || err2 != nil {
			return Mode{}, fmt.Errorf("%s=%q: window %q is not ROWSxCOLS", EnvVar, s, f[1])
		}
		m = Mode{TTY: true, Rows: uint16(rows), Cols: uint16(cols)}
	case len(f) == 2 && f[0] == "pipes":
	default:
		return Mode{}, fmt.Errorf("%s=%q: want \"tty ROWSxCOLS GRACE\" or \"pipes GRACE\"", EnvVar, s)
	}
	g, err := time.ParseDuration(f[len(f)-1])
	if err != nil || g < 0 {
		return Mode{}, fmt.Errorf("%s=%q: grace %q is not a duration", EnvVar, s, f[len(f)-1])
	}
	m.Grace = g
	return m, nil
}

// FromEnv finds EnvVar in env and returns its mode and env without it;
// ok is false when env has none.
func FromEnv(env []string) (m Mode, rest []string, ok bool, err error) {
	for i, kv := range env {
		if v, found := strings.CutPrefix(kv, EnvVar+"="); found {
			m, err = ParseMode(v)
			rest = append(append([]string(nil), env[:i]...), env[i+1:]...)
			return m, rest, true, err
		}
	}
	return Mode{}, env, false, nil
}
