package dblang_test

import (
	"errors"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/dblang"
)

func TestWindowContains(t *testing.T) {
	// 2026-11-23 is a Monday.
	at := func(day int, clock string) time.Time {
		c, err := time.Parse("15:04:05", clock)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 11, 23+day, c.Hour(), c.Minute(), c.Second(), 0, time.UTC)
	}
	const mon, tue, fri, sat, sun = 0, 1, 4, 5, 6
	tests := []struct {
		window string
		at     time.Time
		want   bool
	}{
		{"Mon-Fri 18:00-08:00", at(mon, "18:00:00"), true},
		{"Mon-Fri 18:00-08:00", at(mon, "17:59:59"), false},
		{"Mon-Fri 18:00-08:00", at(tue, "07:59:59"), true}, // Monday's night
		{"Mon-Fri 18:00-08:00", at(tue, "08:00:00"), false},
		{"Mon-Fri 18:00-08:00", at(sat, "07:00:00"), true}, // Friday's night
		{"Mon-Fri 18:00-08:00", at(sat, "19:00:00"), false},
		{"Mon-Fri 18:00-08:00", at(mon, "03:00:00"), false}, // Sunday's night is not in it
		{"Sat-Sun", at(sat, "00:00:00"), true},
		{"Sat-Sun", at(sun, "23:59:59"), true},
		{"Sat-Sun", at(mon, "00:00:00"), false},
		{"Fri-Mon", at(sun, "12:00:00"), true}, // a range round the week's end
		{"Fri-Mon", at(tue, "12:00:00"), false},
		{"12:00-13:30", at(fri, "13:29:59"), true},
		{"12:00-13:30", at(fri, "13:30:00"), false},
		{"Mon,Wed 9:00-17:00", at(mon, "09:00:00"), true},
		{"Mon,Wed 9:00-17:00", at(tue, "10:00:00"), false},
		{"00:00:10-00:00:20", at(mon, "00:00:15"), true},
		{"Mon 20:00-24:00", at(mon, "23:59:59"), true},
	}
	for _, tt := range tests {
		t.Run(tt.window+" at "+tt.at.Format("Mon 15:04:05"), func(t *testing.T) {
			w, err := dblang.ParseWindow(tt.window)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := w.Contains(tt.at); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseWindowRefuses(t *testing.T) {
	for _, s := range []string{"", "Monday", "Mon-Fri 18-08", "25:00-26:00", "Mon 18:00", "Mon 18:00-08:60", "a b c", "Mon-Xyz"} {
		if _, err := dblang.ParseWindow(s); !errors.Is(err, dblang.ErrBadOwnerSetting) {
			t.Errorf("ParseWindow(%q): got %v, want %v", s, err, dblang.ErrBadOwnerSetting)
		}
	}
}
