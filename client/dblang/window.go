package dblang

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is one availability window (available={...} in a database or
// an init file, --available on a stub), as Prospero lent a workstation only
// in its owner's time windows: days of the week and a time of day range,
// in the machine's time zone. "Mon-Fri 18:00-08:00" opens at 18:00 on
// each day from Monday to Friday and closes at 08:00 the next morning;
// "Sat-Sun" is both days whole; "12:00-13:30" is every day; seconds may
// be given ("18:00:30").
type Window struct {
	days       [7]bool // by time.Weekday; the day a window opens
	start, end int     // seconds into the day; start == end: whole day(s)
	text       string
}

// String returns the window as it was written.
func (w Window) String() string { return w.text }

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseWindow reads one window: an optional day list ("Mon-Fri",
// "Sat,Sun", "Mon-Wed,Fri"), then an optional time range ("18:00-08:00");
// at least one of them. Its errors wrap ErrBadOwnerSetting. The server
// calls it to refuse at load time a window no stub could follow, the stub
// (package stub/owner) to follow the windows.
func ParseWindow(s string) (Window, error) {
	w := Window{text: strings.TrimSpace(s)}
	fields := strings.Fields(w.text)
	if len(fields) == 0 || len(fields) > 2 {
		return w, fmt.Errorf("window %q: want DAYS, HH:MM-HH:MM or both: %w", s, ErrBadOwnerSetting)
	}
	days, times := "", ""
	switch {
	case len(fields) == 2:
		days, times = fields[0], fields[1]
	case strings.Contains(fields[0], ":"):
		times = fields[0]
	default:
		days = fields[0]
	}
	if days == "" {
		w.days = [7]bool{true, true, true, true, true, true, true}
	} else if err := parseDays(days, &w.days); err != nil {
		return w, fmt.Errorf("window %q: %w", s, err)
	}
	if times != "" {
		from, to, ok := strings.Cut(times, "-")
		var err1, err2 error
		w.start, err1 = parseClock(from)
		w.end, err2 = parseClock(to)
		if !ok || err1 != nil || err2 != nil {
			return w, fmt.Errorf("window %q: time range %q: want HH:MM-HH:MM: %w", s, times, ErrBadOwnerSetting)
		}
	}
	return w, nil
}

func parseDays(s string, days *[7]bool) error {
	for part := range strings.SplitSeq(strings.ToLower(s), ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, ok1 := weekdays[from]
		b, ok2 := weekdays[to]
		if !isRange {
			b, ok2 = a, ok1
		}
		if !ok1 || !ok2 {
			return fmt.Errorf("days %q: want Mon, Tue, ... or a range such as Mon-Fri: %w", s, ErrBadOwnerSetting)
		}
		for d := a; ; d = (d + 1) % 7 {
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return nil
}

// parseClock reads HH:MM or HH:MM:SS as seconds into the day; 24:00 is
// the day's end.
func parseClock(s string) (int, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, ErrBadOwnerSetting
	}
	n := 0
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		limit := 59
		if i == 0 {
			limit = 24
		}
		if err != nil || v < 0 || v > limit || len(p) > 2 || (i > 0 && len(p) != 2) {
			return 0, ErrBadOwnerSetting
		}
		n = n*60 + v
	}
	if len(parts) == 2 {
		n *= 60
	}
	if n > 24*3600 {
		return 0, ErrBadOwnerSetting
	}
	return n, nil
}

// Contains reports whether t, in its own location, falls in the window.
// A window whose range crosses midnight belongs to the day it opens.
func (w Window) Contains(t time.Time) bool {
	day := t.Weekday()
	sec := t.Hour()*3600 + t.Minute()*60 + t.Second()
	prev := (day + 6) % 7
	switch {
	case w.start == w.end: // whole days
		return w.days[day]
	case w.start < w.end:
		return w.days[day] && sec >= w.start && sec < w.end
	}
	return (w.days[day] && sec >= w.start) || (w.days[prev] && sec < w.end)
}
