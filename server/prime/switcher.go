package prime

import (
	"strings"
	"time"

	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty"
)

// Switcher is the leader's prime-time duty. It remembers the schedules it
// read, by windows and zone, and for each queue when it must look again.
// Only the leader loop uses it.
type Switcher struct {
	h      duty.Handle
	scheds map[string]*dblang.Schedule
	looked map[string]looked
}

// looked is what the Switcher last found for a queue: nothing to do until
// next (zero: never) while the declaration and the state stay these.
type looked struct {
	decl *fsm.DeclaredPrime
	st   fsm.PrimeState
	next time.Time
}

// New returns a leader term's prime-time duty.
func New(h duty.Handle) *Switcher {
	return &Switcher{h: h, scheds: map[string]*dblang.Schedule{}, looked: map[string]looked{}}
}

// schedule returns p's schedule, nil when it does not read (a zone this
// server's tz database lacks).
func (s *Switcher) schedule(p *fsm.DeclaredPrime) *dblang.Schedule {
	key := p.TZ + "\x00" + strings.Join(p.Windows, "\x00")
	if sc, ok := s.scheds[key]; ok {
		return sc
	}
	sc, err := dblang.NewSchedule(p.Windows, p.TZ)
	var out *dblang.Schedule
	if err != nil {
		s.h.Log().Warn("prime-time window does not read; it never switches", "err", err)
	} else {
		out = &sc
	}
	s.scheds[key] = out
	return out
}

// Switch proposes, for every queue whose window should be open at now
// and is not, or closed and is not, a PrimeTimeSwitch scheduled at the
// window's latest edge, and returns the earliest next change of them all
// (zero when none). A switch proposed twice, by this leader or the next,
// happens once.
func (s *Switcher) Switch(now time.Time) time.Time {
	if !s.h.Applies(fsm.PrimeTimeSwitchType) {
		return time.Time{}
	}
	var (
		switches []fsm.PrimeTimeSwitch
		next     time.Time
	)
	s.h.Read(func(v fsm.View) {
		for _, q := range v.Queues() {
			p := q.Declared.Prime
			if p == nil {
				delete(s.looked, q.Name)
				continue
			}
			l, ok := s.looked[q.Name]
			if !ok || l.decl != p || l.st != q.PrimeState || (!l.next.IsZero() && !now.Before(l.next)) {
				var sw *fsm.PrimeTimeSwitch
				l, sw = s.look(q.Name, p, q.PrimeState, now)
				s.looked[q.Name] = l
				if sw != nil {
					// Looked at again once the switch commits (or
					// after every commit until it does).
					delete(s.looked, q.Name)
					switches = append(switches, *sw)
					continue
				}
			}
			if !l.next.IsZero() && (next.IsZero() || l.next.Before(next)) {
				next = l.next
			}
		}
	})
	log := s.h.Log()
	for _, sw := range switches {
		res, err := s.h.Apply(fsm.PrimeTimeSwitchType, sw)
		switch {
		case err != nil:
			log.Warn("prime-time switch not committed; the next leader makes it", "queue", sw.Queue, "open", sw.Open, "err", err)
			return time.Time{}
		case res.Err != nil:
			log.Warn("prime-time switch refused", "queue", sw.Queue, "err", res.Err)
		case !res.Stale:
			log.Info("prime time switched", "queue", sw.Queue, "open", sw.Open, "scheduled", sw.Scheduled)
		}
	}
	return next
}

// look decides queue's switch at now, if one is due, and when to look
// again.
func (s *Switcher) look(queue string, p *fsm.DeclaredPrime, st fsm.PrimeState, now time.Time) (looked, *fsm.PrimeTimeSwitch) {
	l := looked{decl: p, st: st}
	sc := s.schedule(p)
	if sc == nil {
		return l, nil
	}
	if n, ok := sc.Next(now); ok {
		l.next = n
	}
	open := sc.In(now)
	if open == st.Open {
		return l, nil
	}
	at, ok := sc.Last(now)
	if !ok { // always open (or never): the window is as it is from now
		at = now.Truncate(time.Second)
	}
	if !at.After(st.At) {
		// The state records a later switch than this server's clock
		// knows of: its clock is behind. The change after it decides.
		return l, nil
	}
	return l, &fsm.PrimeTimeSwitch{At: now.UTC(), Queue: queue, Open: open, Scheduled: at.UTC()}
}

// NextChange returns when queue's window, declared p with state st, next
// opens or closes at or after now, and whether it then opens: now itself
// when the state in force is not the one the window says (the leader is
// about to switch it); zero when it never changes.
func NextChange(p *fsm.DeclaredPrime, st fsm.PrimeState, now time.Time) (time.Time, bool) {
	sc, err := dblang.NewSchedule(p.Windows, p.TZ)
	if err != nil {
		return time.Time{}, false
	}
	if open := sc.In(now); open != st.Open {
		return now, open
	}
	n, ok := sc.Next(now)
	if !ok {
		return time.Time{}, false
	}
	return n, sc.In(n)
}
