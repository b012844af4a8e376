package dblang

import (
	"testing"
	"time"
)

// utc is a time in UTC: 2026-11-30 is a Monday.
func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustSchedule(t *testing.T, tz string, windows ...string) Schedule {
	t.Helper()
	s, err := NewSchedule(windows, tz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScheduleEdges checks In and Next just before, at and just after a
// window's edges, across midnight, across the week's end, and across a
// daylight-saving change in the declared zone.
func TestScheduleEdges(t *testing.T) {
	tests := []struct {
		name     string
		tz       string
		windows  []string
		at       string // UTC
		wantIn   bool
		wantNext string // UTC; "" for never
	}{
		{"just before opening", "", []string{"Mon-Fri 08:00-18:00"}, "2026-11-30 07:59:59", false, "2026-11-30 08:00:00"},
		{"at opening", "", []string{"Mon-Fri 08:00-18:00"}, "2026-11-30 08:00:00", true, "2026-11-30 18:00:00"},
		{"just after opening", "", []string{"Mon-Fri 08:00-18:00"}, "2026-11-30 08:00:01", true, "2026-11-30 18:00:00"},
		{"just before closing", "", []string{"Mon-Fri 08:00-18:00"}, "2026-11-30 17:59:59", true, "2026-11-30 18:00:00"},
		{"at closing", "", []string{"Mon-Fri 08:00-18:00"}, "2026-11-30 18:00:00", false, "2026-12-01 08:00:00"},
		{"friday evening to monday", "", []string{"Mon-Fri 08:00-18:00"}, "2026-12-04 18:00:00", false, "2026-12-07 08:00:00"},
		{"across midnight, before it", "", []string{"Mon-Fri 18:00-08:00"}, "2026-11-30 23:59:59", true, "2026-12-01 08:00:00"},
		{"across midnight, after it", "", []string{"Mon-Fri 18:00-08:00"}, "2026-12-01 00:00:00", true, "2026-12-01 08:00:00"},
		{"friday night ends saturday", "", []string{"Mon-Fri 18:00-08:00"}, "2026-12-05 07:00:00", true, "2026-12-05 08:00:00"},
		{"saturday then monday night", "", []string{"Mon-Fri 18:00-08:00"}, "2026-12-05 08:00:00", false, "2026-12-07 18:00:00"},
		{"week wrap: sunday night into monday", "", []string{"Sun 22:00-02:00"}, "2026-12-06 23:00:00", true, "2026-12-07 02:00:00"},
		{"week wrap: after it, a week on", "", []string{"Sun 22:00-02:00"}, "2026-12-07 02:00:00", false, "2026-12-13 22:00:00"},
		{"whole days", "", []string{"Sat-Sun"}, "2026-12-04 12:00:00", false, "2026-12-05 00:00:00"},
		{"whole days to monday", "", []string{"Sat-Sun"}, "2026-12-05 00:00:00", true, "2026-12-07 00:00:00"},
		{"two windows, the gap", "", []string{"Mon-Fri 08:00-12:00", "Mon-Fri 13:00-18:00"}, "2026-11-30 12:00:00", false, "2026-11-30 13:00:00"},
		{"two windows that touch", "", []string{"Mon 08:00-12:00", "Mon 12:00-18:00"}, "2026-11-30 09:00:00", true, "2026-11-30 18:00:00"},
		{"always", "", []string{"Mon-Sun"}, "2026-11-30 09:00:00", true, ""},
		{"in a zone: Paris 08:00 is 07:00 UTC in winter", "Europe/Paris", []string{"Mon-Fri 08:00-18:00"}, "2026-11-30 06:59:59", false, "2026-11-30 07:00:00"},
		// Spring forward in Paris: 2026-03-29 02:00 CET becomes 03:00 CEST
		// (01:00 UTC). A window opening at 02:30 opens when the clock
		// jumps past it; one opening at 08:00 opens at 06:00 UTC.
		{"DST spring: a skipped opening opens at the jump", "Europe/Paris", []string{"Sun 02:30-04:00"}, "2026-03-29 00:30:00", false, "2026-03-29 01:00:00"},
		{"DST spring: closing after the jump", "Europe/Paris", []string{"Sun 02:30-04:00"}, "2026-03-29 01:00:00", true, "2026-03-29 02:00:00"},
		{"DST spring: the day's 08:00", "Europe/Paris", []string{"08:00-18:00"}, "2026-03-28 20:00:00", false, "2026-03-29 06:00:00"},
		{"DST spring: the day before's 08:00", "Europe/Paris", []string{"08:00-18:00"}, "2026-03-27 20:00:00", false, "2026-03-28 07:00:00"},
		// Fall back in Paris: 2026-10-25 03:00 CEST becomes 02:00 CET
		// (01:00 UTC). A window closing at 02:30 closes at 02:30 CEST,
		// opens again when the clock goes back to 02:00, and closes at
		// 02:30 CET: the wall clock says so.
		{"DST fall: first 02:30", "Europe/Paris", []string{"Sun 00:00-02:30"}, "2026-10-25 00:00:00", true, "2026-10-25 00:30:00"},
		{"DST fall: the clock goes back", "Europe/Paris", []string{"Sun 00:00-02:30"}, "2026-10-25 00:30:00", false, "2026-10-25 01:00:00"},
		{"DST fall: second 02:30", "Europe/Paris", []string{"Sun 00:00-02:30"}, "2026-10-25 01:00:00", true, "2026-10-25 01:30:00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSchedule(t, tc.tz, tc.windows...)
			at := utc(tc.at)
			if got := s.In(at); got != tc.wantIn {
				t.Errorf("In(%s): got %v, want %v", tc.at, got, tc.wantIn)
			}
			next, ok := s.Next(at)
			switch {
			case tc.wantNext == "" && ok:
				t.Errorf("Next(%s): got %v, want none", tc.at, next.UTC())
			case tc.wantNext != "" && (!ok || !next.Equal(utc(tc.wantNext))):
				t.Errorf("Next(%s): got %v %v, want %s", tc.at, next.UTC(), ok, tc.wantNext)
			case ok && s.In(next) == tc.wantIn:
				t.Errorf("In(Next) = %v, want it changed", s.In(next))
			}
		})
	}
}

// TestScheduleLast checks the latest change at or before a time, the
// instant a switch records.
func TestScheduleLast(t *testing.T) {
	s := mustSchedule(t, "", "Mon-Fri 08:00-18:00")
	for _, tc := range []struct{ at, want string }{
		{"2026-11-30 12:00:00", "2026-11-30 08:00:00"},
		{"2026-11-30 08:00:00", "2026-11-30 08:00:00"},
		{"2026-11-30 07:59:59", "2026-11-27 18:00:00"},
		{"2026-12-06 12:00:00", "2026-12-04 18:00:00"},
	} {
		got, ok := s.Last(utc(tc.at))
		if !ok || !got.Equal(utc(tc.want)) {
			t.Errorf("Last(%s): got %v %v, want %s", tc.at, got.UTC(), ok, tc.want)
		}
	}
	if got, ok := mustSchedule(t, "", "Mon-Sun").Last(utc("2026-11-30 12:00:00")); ok {
		t.Errorf("Last of a window always open: got %v, want none", got)
	}
}
