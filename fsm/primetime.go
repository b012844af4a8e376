package fsm

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Prime time. A queue may declare a weekly window (DeclaredQueue.Prime)
// whose priority and limits apply inside it. When the window opens or
// closes is decided once, by a PrimeTimeSwitch entry the leader proposes
// from the committed state (server/prime), as cron firings are: it
// carries the queue, whether the window is now open, and the scheduled
// instant of the change. Apply records it in the queue's PrimeState and
// never reads a clock or parses a window; a switch for an instant at or
// before the last one recorded, or to the state already in force,
// changes nothing (Result.Stale), so a switch that two leaders propose,
// or one proposes twice, happens once. Every limit check (admit at
// submit, applyPlace) and the planner read the values in force
// (DeclaredQueue.InForce).

// Prime-time events.
const (
	EventPrimeOpened = "prime-opened"
	EventPrimeClosed = "prime-closed"
)

// DeclaredPrime is a queue's prime time (add_q prime={...}): the windows,
// read in TZ, and the values in force inside them; a nil value is the
// queue's own. Since snapshot version 15; a database that declares one is
// loaded only when every server applies PrimeTimeSwitchType.
type DeclaredPrime struct {
	// Windows are dblang.ParseWindow's windows ("Mon-Fri 08:00-18:00");
	// TZ their IANA time zone, "" for UTC. Only the leader reads them.
	Windows []string `json:"windows"`
	TZ      string   `json:"tz,omitempty"`

	Priority      *int   `json:"priority,omitempty"`
	MaxSize       *int64 `json:"max_size,omitempty"`
	MaxActive     *int64 `json:"max_active,omitempty"`
	MaxRunSeconds *int64 `json:"max_run_seconds,omitempty"`
	MaxMemMB      *int64 `json:"max_mem_mb,omitempty"`
	MaxUserActive *int64 `json:"max_user_active,omitempty"`
	MaxUserQueued *int64 `json:"max_user_queued,omitempty"`
}

// sameSchedule reports whether p and o open and close at the same times.
func (p *DeclaredPrime) sameSchedule(o *DeclaredPrime) bool {
	return p != nil && o != nil && p.TZ == o.TZ && slices.Equal(p.Windows, o.Windows)
}

// InForce returns the queue's values in force: its own, overridden by
// its prime-time values when open is set and it declares any.
func (q DeclaredQueue) InForce(open bool) DeclaredQueue {
	p := q.Prime
	if !open || p == nil {
		return q
	}
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	if p.Priority != nil {
		q.Priority = *p.Priority
	}
	set(&q.MaxSize, p.MaxSize)
	set(&q.MaxActive, p.MaxActive)
	set(&q.MaxRunSeconds, p.MaxRunSeconds)
	set(&q.MaxMemMB, p.MaxMemMB)
	set(&q.MaxUserActive, p.MaxUserActive)
	set(&q.MaxUserQueued, p.MaxUserQueued)
	return q
}

// PrimeState is what a queue's prime-time switches decided: whether its
// window is open, the scheduled instant of the last switch (zero before
// the first, and after a database load that changed the window) and the
// index of the entry that made it.
type PrimeState struct {
	Open  bool      `json:"open,omitempty"`
	At    time.Time `json:"at,omitzero"`
	Index uint64    `json:"index,omitempty"`
}

// PrimeTimeSwitch opens (Open) or closes queue Queue's prime-time window
// as of Scheduled, the instant the leader computed from the window and
// the committed state. At is the leader's clock when it proposed it.
// Since command level 43.
type PrimeTimeSwitch struct {
	At        time.Time `json:"at"`
	Queue     string    `json:"queue"`
	Open      bool      `json:"open"`
	Scheduled time.Time `json:"scheduled"`
}

// applyPrimeTimeSwitch records one window change. A queue that is not
// declared is an error; one without a window (a load removed it), a
// Scheduled at or before the last switch's, or the state already in
// force changes nothing (Stale).
func (d *db) applyPrimeTimeSwitch(index uint64, c *PrimeTimeSwitch) *Result {
	q, ok := d.database.Queue(c.Queue)
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("prime-time switch of queue %s: %w", c.Queue, ErrNoSuchQueue)}
	}
	st := d.prime[c.Queue]
	if q.Prime == nil || !c.Scheduled.After(st.At) || st.Open == c.Open {
		return &Result{Index: index, Stale: true}
	}
	if d.prime == nil {
		d.prime = map[string]PrimeState{}
	}
	d.prime[c.Queue] = PrimeState{Open: c.Open, At: c.Scheduled, Index: index}
	kind, verb := EventPrimeClosed, "closed"
	if c.Open {
		kind, verb = EventPrimeOpened, "opened"
	}
	in := q.InForce(c.Open)
	limits := describeLimits(in)
	if in.MaxUserActive > 0 {
		limits += fmt.Sprintf(", max user active %d", in.MaxUserActive)
	}
	if in.MaxUserQueued > 0 {
		limits += fmt.Sprintf(", max user queued %d", in.MaxUserQueued)
	}
	d.event(index, c.At, kind, 0, -1, 0, "", fmt.Sprintf("queue %s: prime time %s at %s (%s): %s",
		c.Queue, verb, stamp(c.Scheduled), strings.Join(q.Prime.Windows, "; "), limits))
	return &Result{Index: index}
}

// primeAfterLoad keeps the prime-time states true after the database
// changed from old: a queue that no longer declares a window loses its
// state (closed), and one whose window or zone changed keeps whether it is
// open but forgets when, so the leader may switch it at the new window's
// edges, earlier ones included.
func (d *db) primeAfterLoad(old *Database) {
	for name, st := range d.prime {
		q, ok := d.database.Queue(name)
		if !ok || q.Prime == nil {
			delete(d.prime, name)
			continue
		}
		if was, ok := old.Queue(name); !ok || !q.Prime.sameSchedule(was.Prime) {
			st.At = time.Time{}
			d.prime[name] = st
		}
	}
}

// primeOpen reports whether queue's prime-time window is open.
func (d *db) primeOpen(queue string) bool { return d.prime[queue].Open }

// primeRecord is one queue's PrimeState in a snapshot's header.
type primeRecord struct {
	Queue string `json:"queue"`
	PrimeState
}

// primeRecords lists the states by queue name, for a snapshot.
func (d *db) primeRecords() []primeRecord {
	if len(d.prime) == 0 {
		return nil
	}
	out := make([]primeRecord, 0, len(d.prime))
	for name, st := range d.prime {
		out = append(out, primeRecord{Queue: name, PrimeState: st})
	}
	slices.SortFunc(out, func(a, b primeRecord) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

// restorePrime sets the states a snapshot's header holds.
func (d *db) restorePrime(rs []primeRecord) {
	d.prime = nil
	for _, r := range rs {
		if d.prime == nil {
			d.prime = make(map[string]PrimeState, len(rs))
		}
		d.prime[r.Queue] = r.PrimeState
	}
}

// PrimeState returns queue's prime-time state.
func (v View) PrimeState(queue string) PrimeState { return v.d.prime[queue] }
