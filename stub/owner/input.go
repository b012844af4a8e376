package owner

import (
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// inputDetector puts the machine to sleep while an input device or
// terminal was used within hold: its access time is that recent, as
// HTCondor computes KeyboardIdle.
type inputDetector struct {
	globs []string
	hold  time.Duration
	// active is the last input seen; zero before any.
	active time.Time
}

// reasonInput is the verdict while the keyboard or mouse was used within
// hold.
const reasonInput = "keyboard or mouse used"

// check returns reasonInput when a file of the globs was accessed less
// than hold before now. Files that vanish meanwhile are skipped.
func (d *inputDetector) check(now time.Time) (string, error) {
	last, err := lastInput(d.globs)
	if err != nil {
		return "", err
	}
	d.active = later(d.active, last)
	if !last.IsZero() && now.Sub(last) < d.hold {
		return reasonInput, nil
	}
	return "", nil
}

// lastInput is the latest access time of the files the globs match; the
// zero time when none matches.
func lastInput(globs []string) (time.Time, error) {
	var last time.Time
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			return time.Time{}, fmt.Errorf("input glob %q: %w", g, err)
		}
		for _, f := range files {
			var st unix.Stat_t
			if unix.Stat(f, &st) != nil {
				continue
			}
			last = later(last, time.Unix(st.Atim.Unix()))
		}
	}
	return last, nil
}
