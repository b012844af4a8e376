package cron

import (
	"testing"
	"time"
)

func TestGraceOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		expr string
		want time.Duration
	}{
		{"@every 2s", time.Second},
		{"@every 1m", grace},
		{"*/4 * * * * *", 2 * time.Second},
		{"0 3 * * *", grace},
		{"0 0 30 2 *", grace}, // February 30th: never fires
	} {
		sched, err := parse(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := graceOf(sched, at); got != tc.want {
			t.Errorf("%s: grace %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestParseCronZones(t *testing.T) {
	at := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expr string
		want time.Time
	}{
		{"0 3 * * *", time.Date(2026, 7, 1, 3, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Europe/Paris 0 3 * * *", time.Date(2026, 7, 1, 1, 0, 0, 0, time.UTC)}, // CEST, UTC+2
		{"TZ=America/New_York 0 3 * * *", time.Date(2026, 7, 1, 7, 0, 0, 0, time.UTC)},  // EDT, UTC-4
		{"30 0 3 * * *", time.Date(2026, 7, 1, 3, 0, 30, 0, time.UTC)},                  // seconds first
		{"@daily", time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)},
	} {
		sched, err := parse(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := sched.Next(at); !got.Equal(tc.want) {
			t.Errorf("%s: next after %v is %v, want %v", tc.expr, at, got.UTC(), tc.want)
		}
	}
}
