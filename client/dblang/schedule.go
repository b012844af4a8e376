package dblang

import (
	"fmt"
	"slices"
	"time"
)

// Schedule is a set of windows read in one time zone: a queue's prime
// time. The time is inside it while any window contains it. Its methods
// are pure functions of their arguments; the server's leader alone asks
// them, to decide when a window opens or closes.
type Schedule struct {
	windows []Window
	loc     *time.Location
	bounds  []int64 // seconds into a day at which In may change, sorted
}

// horizon is how far Next looks ahead: a weekly schedule that has not
// changed within 8 days never changes.
const horizon = 8 * 24 * time.Hour

// NewSchedule reads windows (ParseWindow's syntax) in the time zone tz
// ("" is UTC). Loading the zone reads the tz database.
func NewSchedule(windows []string, tz string) (Schedule, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return Schedule{}, fmt.Errorf("prime-time schedule: time zone %q: %w", tz, err)
		}
		loc = l
	}
	s := Schedule{loc: loc, bounds: []int64{0}}
	for _, text := range windows {
		w, err := ParseWindow(text)
		if err != nil {
			return Schedule{}, fmt.Errorf("prime-time schedule: %w", err)
		}
		s.windows = append(s.windows, w)
		s.bounds = append(s.bounds, int64(w.start%86400), int64(w.end%86400))
	}
	slices.Sort(s.bounds)
	s.bounds = slices.Compact(s.bounds)
	return s, nil
}

// Location is the schedule's time zone.
func (s Schedule) Location() *time.Location { return s.loc }

// In reports whether t is inside the schedule.
func (s Schedule) In(t time.Time) bool {
	lt := t.In(s.loc)
	for _, w := range s.windows {
		if w.Contains(lt) {
			return true
		}
	}
	return false
}

// Next returns the first instant after t at which In changes, and false
// when it does not change within 8 days (the windows cover every time,
// or none). A change falls on a whole second.
//
// Within a stretch of the zone's history with one UTC offset, the wall
// clock runs with the instant, so In can change only where the wall clock
// reaches a window's start or end or a day begins; at the stretch's end
// (a daylight-saving change) it may change too. Next walks those
// instants in order, so a window whose start a spring-forward skips
// opens when the clock jumps past it, and one whose end a fall-back
// repeats closes, opens and closes again as the wall clock says.
func (s Schedule) Next(t time.Time) (time.Time, bool) {
	cur := s.In(t)
	limit := t.Add(horizon)
	from := t
	for from.Before(limit) {
		lt := from.In(s.loc)
		_, off := lt.Zone()
		_, end := lt.ZoneBounds()
		if end.IsZero() || end.After(limit) {
			end = limit
		}
		wall := lt.Unix() + int64(off)
		day := wall / 86400
		if wall < 0 && wall%86400 != 0 {
			day--
		}
		for d := day; ; d++ {
			past := false
			for _, b := range s.bounds {
				at := time.Unix(d*86400+b-int64(off), 0)
				if !at.After(from) {
					continue
				}
				if !at.Before(end) {
					past = true
					break
				}
				if s.In(at) != cur {
					return at, true
				}
			}
			if past {
				break
			}
		}
		if !end.Before(limit) {
			break
		}
		if s.In(end) != cur {
			return end, true
		}
		from = end
	}
	return time.Time{}, false
}

// Last returns the latest instant at or before t at which In changed,
// looking back 8 days, and false when it did not change in them.
func (s Schedule) Last(t time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	for from := t.Add(-horizon); ; {
		n, ok := s.Next(from)
		if !ok || n.After(t) {
			return last, found
		}
		last, found, from = n, true, n
	}
}
