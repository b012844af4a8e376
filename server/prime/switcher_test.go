package prime

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty/dutytest"
)

// mon is 2026-11-30, a Monday, at hh:mm:ss UTC, days days later.
func mon(days, hh, mm, ss int) time.Time {
	return time.Date(2026, 11, 30+days, hh, mm, ss, 0, time.UTC)
}

// load declares queue debug with a window and a priority of 20 inside it.
func load(t *testing.T, h *dutytest.Handle, tz string, windows ...string) {
	t.Helper()
	prio := 20
	h.MustApply(t, fsm.LoadDatabaseType, fsm.LoadDatabase{At: mon(0, 0, 0, 0), By: "tclark", Database: fsm.Database{
		Queues: []fsm.DeclaredQueue{{Name: "debug", Priority: 5, Prime: &fsm.DeclaredPrime{Windows: windows, TZ: tz, Priority: &prio}}},
	}})
}

// state reads queue debug's prime-time state and priority in force.
func state(h *dutytest.Handle) (fsm.PrimeState, int) {
	var qv fsm.QueueView
	h.Read(func(v fsm.View) { qv, _ = v.Queue("debug") })
	return qv.PrimeState, qv.Priority
}

// The duty switches at each edge once, with the edge's instant, answers
// with the next change, and proposes nothing between edges or again at
// one already switched.
func TestSwitchAtEdgesOnce(t *testing.T) {
	h := dutytest.New()
	load(t, h, "", "Mon-Fri 08:00-18:00")
	s := New(h)
	steps := []struct {
		now      time.Time
		entries  uint64
		open     bool
		at       time.Time
		wantNext time.Time
	}{
		{mon(0, 7, 59, 59), 0, false, time.Time{}, mon(0, 8, 0, 0)},
		{mon(0, 8, 0, 0), 1, true, mon(0, 8, 0, 0), time.Time{}}, // looked at again after the commit
		{mon(0, 8, 0, 0), 0, true, mon(0, 8, 0, 0), mon(0, 18, 0, 0)},
		{mon(0, 12, 0, 0), 0, true, mon(0, 8, 0, 0), mon(0, 18, 0, 0)},
		{mon(0, 18, 0, 1), 1, false, mon(0, 18, 0, 0), time.Time{}},
		{mon(0, 18, 0, 1), 0, false, mon(0, 18, 0, 0), mon(1, 8, 0, 0)},
		{mon(4, 18, 0, 0), 0, false, mon(0, 18, 0, 0), mon(7, 8, 0, 0)}, // no leader Tue-Fri: closed now, as it is
		{mon(7, 8, 0, 0), 1, true, mon(7, 8, 0, 0), time.Time{}},
	}
	for i, st := range steps {
		before := h.Index()
		next := s.Switch(st.now)
		if got := h.Index() - before; got != st.entries {
			t.Errorf("step %d at %v: committed %d entries, want %d", i, st.now, got, st.entries)
		}
		ps, prio := state(h)
		if ps.Open != st.open || !ps.At.Equal(st.at) {
			t.Errorf("step %d at %v: state %+v, want open %v at %v", i, st.now, ps, st.open, st.at)
		}
		if want := map[bool]int{true: 20, false: 5}[st.open]; prio != want {
			t.Errorf("step %d: priority in force %d, want %d", i, prio, want)
		}
		if !next.Equal(st.wantNext) {
			t.Errorf("step %d: next %v, want %v", i, next, st.wantNext)
		}
	}
}

// A new leader reads the committed state: it makes the switch the last
// leader did not, scheduled at the edge rather than at its own clock, and
// not one the last leader made; one whose clock is behind the committed
// switch proposes nothing.
func TestSwitchAcrossLeaders(t *testing.T) {
	h := dutytest.New()
	load(t, h, "", "Mon-Fri 08:00-18:00")
	New(h).Switch(mon(0, 8, 0, 0)) // the first leader opens the window, then is gone
	before := h.Index()
	New(h).Switch(mon(0, 8, 0, 5))
	if h.Index() != before {
		t.Errorf("a second leader proposed a switch the first made")
	}
	// The first leader stopped before 18:00; the next takes over at 18:00:07.
	New(h).Switch(mon(0, 18, 0, 7))
	if ps, _ := state(h); ps.Open || !ps.At.Equal(mon(0, 18, 0, 0)) {
		t.Errorf("a late leader's close: state %+v, want closed at 18:00:00", ps)
	}
	// A leader whose clock is 3 s behind: the window should be open by
	// the state, not by its clock; it must not close it again.
	h.MustApply(t, fsm.PrimeTimeSwitchType, fsm.PrimeTimeSwitch{At: mon(1, 8, 0, 1), Queue: "debug", Open: true, Scheduled: mon(1, 8, 0, 0)})
	before = h.Index()
	New(h).Switch(mon(1, 7, 59, 57))
	if h.Index() != before {
		t.Errorf("a leader with a clock behind the committed switch proposed one")
	}
}

// Two leaders that both decide the same switch (the old one's entry
// commits after the new one proposed) make it once.
func TestSwitchRaceAppliesOnce(t *testing.T) {
	h := dutytest.New()
	load(t, h, "", "Mon-Fri 08:00-18:00")
	var sws []*fsm.PrimeTimeSwitch
	for _, now := range []time.Time{mon(0, 8, 0, 0), mon(0, 8, 0, 2)} {
		var st fsm.PrimeState
		var p *fsm.DeclaredPrime
		h.Read(func(v fsm.View) {
			qv, _ := v.Queue("debug")
			st, p = qv.PrimeState, qv.Declared.Prime
		})
		_, sw := New(h).look("debug", p, st, now)
		if sw == nil {
			t.Fatalf("no switch decided at %v", now)
		}
		sws = append(sws, sw)
	}
	if !sws[0].Scheduled.Equal(sws[1].Scheduled) {
		t.Errorf("the two leaders scheduled %v and %v, want the same edge", sws[0].Scheduled, sws[1].Scheduled)
	}
	if res := h.MustApply(t, fsm.PrimeTimeSwitchType, *sws[0]); res.Stale {
		t.Errorf("the first switch: Stale")
	}
	if res := h.MustApply(t, fsm.PrimeTimeSwitchType, *sws[1]); !res.Stale {
		t.Errorf("the second switch applied, want Stale")
	}
}

// The duty follows the declared zone across a daylight-saving change:
// 08:00 in Paris is 07:00 UTC on Saturday 2026-03-28 and 06:00 UTC on
// Sunday 2026-03-29.
func TestSwitchDST(t *testing.T) {
	h := dutytest.New()
	load(t, h, "Europe/Paris", "08:00-18:00")
	s := New(h)
	sat := time.Date(2026, 3, 28, 7, 0, 0, 0, time.UTC)
	if next := s.Switch(sat.Add(-time.Second)); !next.Equal(sat) {
		t.Errorf("Saturday: next %v, want %v", next, sat)
	}
	s.Switch(sat)
	if ps, _ := state(h); !ps.Open || !ps.At.Equal(sat) {
		t.Errorf("Saturday 08:00 Paris: %+v, want open at %v", ps, sat)
	}
	s.Switch(time.Date(2026, 3, 28, 17, 0, 0, 0, time.UTC))
	sun := time.Date(2026, 3, 29, 6, 0, 0, 0, time.UTC)
	if next := s.Switch(sun.Add(-time.Second)); !next.Equal(sun) {
		t.Errorf("Sunday: next %v, want %v", next, sun)
	}
	s.Switch(sun)
	if ps, _ := state(h); !ps.Open || !ps.At.Equal(sun) {
		t.Errorf("Sunday 08:00 Paris: %+v, want open at %v", ps, sun)
	}
}

// Below level 43 the duty proposes nothing; NextChange says when the
// window changes next, and now when a switch is due.
func TestSwitchLevelAndNextChange(t *testing.T) {
	h := dutytest.New()
	load(t, h, "", "Mon-Fri 08:00-18:00")
	h.SetLevel(fsm.PrimeTimeSwitchType - 1)
	before := h.Index()
	New(h).Switch(mon(0, 9, 0, 0))
	if h.Index() != before {
		t.Errorf("a group below level 43 got a switch")
	}
	p := &fsm.DeclaredPrime{Windows: []string{"Mon-Fri 08:00-18:00"}}
	if n, open := NextChange(p, fsm.PrimeState{}, mon(0, 9, 0, 0)); !n.Equal(mon(0, 9, 0, 0)) || !open {
		t.Errorf("a due switch: got %v %v, want now and open", n, open)
	}
	if n, open := NextChange(p, fsm.PrimeState{Open: true}, mon(0, 9, 0, 0)); !n.Equal(mon(0, 18, 0, 0)) || open {
		t.Errorf("while open: got %v %v, want 18:00 and closed", n, open)
	}
}
