package queue

import (
	"slices"
	"time"
)

// DeclaredEnd is when an instance started at start declares it will have
// ended: start + runLimit, its queue's run limit (Limits.RunLimit). It is
// the zero time, meaning no declared end, when runLimit <= 0 or start is
// zero. The caller may add the kill grace period.
func DeclaredEnd(start time.Time, runLimit time.Duration) time.Time {
	if runLimit <= 0 || start.IsZero() {
		return time.Time{}
	}
	return start.Add(runLimit)
}

// Shadow is the EASY-backfill reservation time of the head job: the
// earliest time by which, judged by declared run limits, enough capacity
// will have freed for the head's need waiting instances.
//
// The head is the first job in queue order, among those Active admits,
// that could not be placed for lack of capacity on machines that otherwise
// match it. need is the number of its instances still waiting (not placed
// in this pass). ends holds one entry per unit of that capacity now busy: the declared
// end (DeclaredEnd) of what occupies it. A unit is a slot when each head
// instance needs one slot; it is a whole machine, ending at the latest end
// of what runs there, when a head instance needs more of a machine than
// one slot frees (its memory, say). A zero entry has no declared end and
// never frees. Entries may lie before now (an instance past its limit that
// is being killed). ends is not changed.
//
// The rule: with need <= 0 the head can start now, so at is the zero time
// and known is true (nothing ends by it: MayBackfill refuses). Otherwise
// at is the need-th earliest non-zero entry of ends and known is true; when
// fewer than need entries are non-zero, at is zero and known is false.
func Shadow(need int, ends []time.Time) (at time.Time, known bool) {
	if need <= 0 {
		return time.Time{}, true
	}
	declared := make([]time.Time, 0, len(ends))
	for _, e := range ends {
		if !e.IsZero() {
			declared = append(declared, e)
		}
	}
	if len(declared) < need {
		return time.Time{}, false
	}
	slices.SortFunc(declared, time.Time.Compare)
	return declared[need-1], true
}

// MayBackfill reports whether a job later in queue order than the head
// may take, now, capacity the head competes for (see Shadow): true only
// when the shadow is known, the job's declared run limit runLimit is
// positive, and it ends by the shadow: now + runLimit <= shadow. So a job
// without a run limit never jumps the head on its capacity, and neither
// does any job while the head's start cannot be bounded (known false):
// otherwise a stream of small jobs could take every slot as it frees.
// Capacity the head does not compete for (machines that do not match it)
// is always free to take; the caller decides which that is.
func MayBackfill(now time.Time, runLimit time.Duration, shadow time.Time, known bool) bool {
	if !known || runLimit <= 0 {
		return false
	}
	return !now.Add(runLimit).After(shadow)
}
