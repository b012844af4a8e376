package owner

import (
	"fmt"
	"time"

	"github.com/netmgr/netmgr/client/dblang"
)

// The sources a Watch reads when the Config names none: Linux's.
const (
	DefaultUtmp     = "/var/run/utmp"
	DefaultLoadAvg  = "/proc/loadavg"
	DefaultInterval = 500 * time.Millisecond
	// DefaultMonitorEvery is how often the load-monitor program runs.
	DefaultMonitorEvery = 5 * time.Second
)

// DefaultInputGlobs are the input devices and terminals whose access
// times tell when the keyboard or mouse was last used, as HTCondor
// measures KeyboardIdle: the kernel's input event devices and mice, the
// virtual consoles, and the pseudo-terminals of local sessions.
var DefaultInputGlobs = []string{"/dev/input/event*", "/dev/input/mice", "/dev/input/mouse*", "/dev/tty[0-9]*", "/dev/pts/[0-9]*"}

// Config turns detectors on: each is off at its zero value.
type Config struct {
	// SleepOnLogin puts the machine to sleep while a console or local
	// terminal session is open (a USER_PROCESS entry in Utmp) and until
	// SleepOnLogin after the last one closed.
	SleepOnLogin time.Duration
	// SleepOnInput puts the machine to sleep while a keyboard, mouse or
	// terminal (InputGlobs) was used within SleepOnInput.
	SleepOnInput time.Duration
	// SleepOnLoad puts the machine to sleep while the load average not
	// caused by the stub's own jobs is over it (or the load monitor's
	// number, when there is a monitor that prints one).
	SleepOnLoad float64
	// LoadMonitor is a program run every MonitorEvery: it prints a number,
	// used as the load, or the word sleep or wake, with an optional reason
	// after sleep.
	LoadMonitor  string
	MonitorEvery time.Duration
	// Available, when it lists windows ("Mon-Fri 18:00-08:00",
	// "Sat-Sun"; see Window), puts the machine to sleep outside all of
	// them, in Location's time (the machine's local time when nil).
	Available []string
	Location  *time.Location

	// Utmp, InputGlobs and LoadAvg are the sources; the defaults when
	// empty.
	Utmp       string
	InputGlobs []string
	LoadAvg    string
	// Interval is how often the detectors look; DefaultInterval when zero.
	Interval time.Duration
	// OwnLoad, when set, returns the load the stub's own jobs cause now
	// (busy CPUs), which the load detector subtracts. GroupsLoad makes one
	// from the jobs' process groups.
	OwnLoad func() float64
}

// Enabled reports whether any detector is on.
func (c Config) Enabled() bool {
	return c.SleepOnLogin > 0 || c.SleepOnInput > 0 || c.SleepOnLoad > 0 || c.LoadMonitor != "" || len(c.Available) > 0
}

// Check reports a setting that cannot work.
func (c Config) Check() error {
	switch {
	case c.SleepOnLogin < 0:
		return fmt.Errorf("sleep on login %v: %w", c.SleepOnLogin, ErrBadSetting)
	case c.SleepOnInput < 0:
		return fmt.Errorf("sleep on input %v: %w", c.SleepOnInput, ErrBadSetting)
	case c.SleepOnLoad < 0:
		return fmt.Errorf("sleep on load %v: %w", c.SleepOnLoad, ErrBadSetting)
	}
	for _, w := range c.Available {
		if _, err := dblang.ParseWindow(w); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Utmp == "" {
		c.Utmp = DefaultUtmp
	}
	if len(c.InputGlobs) == 0 {
		c.InputGlobs = DefaultInputGlobs
	}
	if c.LoadAvg == "" {
		c.LoadAvg = DefaultLoadAvg
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.MonitorEvery <= 0 {
		c.MonitorEvery = DefaultMonitorEvery
	}
	if c.Location == nil {
		c.Location = time.Local
	}
	return c
}
