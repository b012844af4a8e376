package server

import (
	"testing"
	"time"
)

// TestPolicyNotesRateLimit: a failure is recorded once a minute at most,
// the next record saying how many were left out; another failure has a
// limit of its own.
func TestPolicyNotesRateLimit(t *testing.T) {
	var p policyNotes
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		key        string
		at         time.Duration
		record     bool
		repeatsNow int
	}{
		{"a", 0, true, 0},
		{"a", time.Second, false, 0},
		{"a", 59 * time.Second, false, 0},
		{"b", 59 * time.Second, true, 0},
		{"a", time.Minute, true, 2},
		{"a", time.Minute + time.Second, false, 0},
		{"a", 3 * time.Minute, true, 1},
	}
	for i, s := range steps {
		record, repeats := p.note(s.key, t0.Add(s.at))
		if record != s.record || repeats != s.repeatsNow {
			t.Errorf("step %d (%s at %v): note = %v, %d; want %v, %d", i, s.key, s.at, record, repeats, s.record, s.repeatsNow)
		}
	}
}
