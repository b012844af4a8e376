package lease

import (
	"container/heap"
	"maps"
	"slices"
	"time"
)

// changes is what a Table records, once TrackChanges is called, for a
// reader that keeps each machine's liveness between looks (the leader's
// scheduler, server/liveness.go) and must learn which machines' may have
// changed without looking at every machine: those whose reported load,
// own load or idle time changed, those whose silence may have crossed
// the suspicion threshold (a renewal after a longer gap, or none for
// that long since one), and every machine at the first look and once
// the leadership is older than the threshold (machines that never
// renewed in it fall silent then).
type changes struct {
	gap   time.Duration // the suspicion threshold; 0 while not tracking
	moved map[string]struct{}
	// due holds a renewal per renewal, ordered by when its machine falls
	// silent for gap if it renews no more.
	due dueHeap
	// looked and aged: the first look was made, and one after since+gap.
	looked, aged bool
}

// TrackChanges makes t record the machines whose liveness may change,
// silence longer than SuspectAfter counting as a change (Changes). Call
// it once, before the renewals it should see.
func (t *Table) TrackChanges() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ch = changes{gap: SuspectAfter(t.pool), moved: make(map[string]struct{})}
}

// SuspectAfter is the suspicion threshold of the largest pool this
// leadership counted: a machine silent longer is suspect.
func (t *Table) SuspectAfter() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return SuspectAfter(t.pool)
}

// countPool records, under t.mu, a renewal's count of the pool: a larger
// pool may renew less often, so while tracking, a longer threshold makes
// the next Changes look at every machine (those suspected under the
// shorter one may no longer be).
func (t *Table) countPool(pool int) {
	if pool <= t.pool {
		return
	}
	t.pool = pool
	if gap := SuspectAfter(pool); t.ch.gap != 0 && gap != t.ch.gap {
		t.ch.gap, t.ch.looked, t.ch.aged = gap, false, false
	}
}

// Changes returns the machines whose reported load, own load or idle
// time changed since the last call, or whose silence may have crossed
// the threshold by now (renewed after a gap longer than it, or silent
// for longer than it since their last renewal), and forgets them; all
// when the caller must look at every machine (the first call, and the
// first once the leadership is older than the threshold). Only with
// TrackChanges.
func (t *Table) Changes(now time.Time) (names []string, all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &t.ch
	if !c.looked || !c.aged && now.After(t.since.Add(c.gap)) {
		c.looked, c.aged = true, now.After(t.since.Add(c.gap))
		clear(c.moved) // the renewals stay due: their silences are still to come
		return nil, true
	}
	for len(c.due) > 0 && now.After(c.due[0].at.Add(c.gap)) {
		d := heap.Pop(&c.due).(due)
		if t.last[d.machine].Equal(d.at) { // no renewal since: silent for gap
			c.moved[d.machine] = struct{}{}
		}
	}
	names = slices.Collect(maps.Keys(c.moved))
	clear(c.moved)
	return names, false
}

// noteRenewal records, under t.mu, a renewal of machine at at after the
// one at prev (zero: none) for Changes.
func (t *Table) noteRenewal(machine string, prev, at time.Time) {
	c := &t.ch
	if c.gap == 0 {
		return
	}
	if prev.Before(t.since) {
		prev = t.since
	}
	if at.Sub(prev) > c.gap {
		c.moved[machine] = struct{}{} // it may have been suspected meanwhile
	}
	heap.Push(&c.due, due{machine: machine, at: at})
}

// noteMoved records, under t.mu, that machine's load, own load or idle
// time changed.
func (t *Table) noteMoved(machine string) {
	if t.ch.gap != 0 {
		t.ch.moved[machine] = struct{}{}
	}
}

// due is one renewal: its machine falls silent at at plus the gap.
type due struct {
	machine string
	at      time.Time
}

// dueHeap is a min-heap of renewals by time (container/heap).
type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// IdleMachines returns the machines whose stubs report when their owner
// last used them: their idle minutes grow with the clock, so a reader
// keeping liveness between looks must look at them every time.
func (t *Table) IdleMachines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Keys(t.idle))
}
