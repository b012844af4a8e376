package stub

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/owner"
)

// TestOwnerSettingsPrecedence checks the merge of flags, init file and
// database: flags < init file < a declared machine's settings, and for an
// undeclared machine the claimed mtype's settings below the init file's;
// a queue's policy overrides the machine's for its jobs.
func TestOwnerSettingsPrecedence(t *testing.T) {
	s := &ownerSettings{
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		flags:      owner.Config{SleepOnInput: time.Minute, SleepOnLoad: 2},
		flagVacate: 10 * time.Minute,
		init:       map[string]string{"sleep_on_input": "5", "keep_suspended": "yes"},
	}
	check := func(what string, input time.Duration, load float64, vacate time.Duration, keep bool, avail []string) {
		t.Helper()
		m := s.current()
		if m.cfg.SleepOnInput != input || m.cfg.SleepOnLoad != load || m.vacateAfter != vacate || m.keepSuspended != keep || !slices.Equal(m.cfg.Available, avail) {
			t.Errorf("%s: got input %v, load %v, vacate %v, keep %v, available %q; want %v, %v, %v, %v, %q",
				what, m.cfg.SleepOnInput, m.cfg.SleepOnLoad, m.vacateAfter, m.keepSuspended, m.cfg.Available, input, load, vacate, keep, avail)
		}
	}
	check("flags and init file", 5*time.Minute, 2, 10*time.Minute, true, nil)

	s.db = &client.OwnerSettings{Declared: false, Settings: map[string]string{"sleep_on_input": "1", "vacate_after": "90s", "available": "Sat-Sun"}}
	check("an undeclared machine's claimed mtype", 5*time.Minute, 2, 90*time.Second, true, []string{"Sat-Sun"})

	s.db = &client.OwnerSettings{Declared: true, Settings: map[string]string{"sleep_on_input": "1", "keep_suspended": "no", "sleep_on_load": "0.5"}}
	check("a declared machine", time.Minute, 0.5, 10*time.Minute, false, nil)

	s.db = &client.OwnerSettings{Declared: true, Settings: map[string]string{"available": "Someday 25:00-26:00"}}
	check("a window that does not parse is left out", 5*time.Minute, 2, 10*time.Minute, true, nil)

	for _, tc := range []struct {
		queue  map[string]string
		vacate time.Duration
		keep   bool
	}{
		{nil, 10 * time.Minute, false},
		{map[string]string{"vacate_after": "1"}, time.Minute, false},
		{map[string]string{"keep_suspended": "yes"}, 10 * time.Minute, true},
		{map[string]string{"suspend": "no", "keep_suspended": "yes"}, 0, false},
		{map[string]string{"suspend": "yes"}, 10 * time.Minute, false},
	} {
		if v, k := queuePolicy(10*time.Minute, false, tc.queue); v != tc.vacate || k != tc.keep {
			t.Errorf("queuePolicy(%v) = %v, %v; want %v, %v", tc.queue, v, k, tc.vacate, tc.keep)
		}
	}
}
