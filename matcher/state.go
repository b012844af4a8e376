package matcher

import (
	"math/bits"
)

// State filters: they turn down machines for what they are doing now, not
// for what they are; a machine that passes the requirement filters but not
// these still counts in Result.Matching.

var (
	_ filter = reservationFilter{}
	_ filter = upFilter{}
	_ filter = awakeFilter{}
	_ filter = slotFilter{}
	_ filter = perMachineFilter{}
)

// reservationFilter keeps machines that are not reserved, or reserved by the
// job's owner.
type reservationFilter struct{}

func (reservationFilter) name() string      { return FilterReservation }
func (reservationFilter) causes(*query) int { return 1 }

func (reservationFilter) narrow(q *query, counts []int) {
	p := q.pool
	for w, word := range p.cand {
		for rest := word & p.reserved[w]; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			if p.machines[w*64+b].ReservedBy != q.req.Owner {
				word &^= 1 << uint(b)
				counts[0]++
			}
		}
		p.cand[w] = word
	}
}

func (reservationFilter) reason(_ *query, _, n int) string {
	return plural(n, "is reserved by another user", "are reserved by another user")
}

// upFilter keeps machines that are in the pool and not draining.
type upFilter struct{}

func (upFilter) name() string                  { return FilterUp }
func (upFilter) causes(*query) int             { return 1 }
func (upFilter) narrow(q *query, counts []int) { counts[0] = q.pool.cand.andNot(q.pool.down) }

func (upFilter) reason(_ *query, _, n int) string {
	return plural(n, "is down or draining", "are down or draining")
}

// awakeFilter keeps machines that are not asleep, counting those it
// removes per reason they sleep for. It visits only asleep candidates.
type awakeFilter struct{}

func (awakeFilter) name() string { return FilterAwake }

// causes is one per distinct reason; none when no machine is asleep.
func (awakeFilter) causes(q *query) int { return len(q.pool.sleepReasons) }

func (awakeFilter) narrow(q *query, counts []int) {
	p := q.pool
	for w, word := range p.cand {
		for rest := word & p.asleep[w]; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			word &^= 1 << uint(b)
			counts[p.sleepCause[w*64+b]]++
		}
		p.cand[w] = word
	}
}

func (awakeFilter) reason(q *query, cause, n int) string {
	verb := plural(n, "is asleep", "are asleep")
	if r := q.pool.sleepReasons[cause]; r != "" {
		return verb + " (" + r + ")"
	}
	return verb
}

// slotFilter keeps machines running fewer instances than they have slots.
type slotFilter struct{}

func (slotFilter) name() string                  { return FilterSlot }
func (slotFilter) causes(*query) int             { return 1 }
func (slotFilter) narrow(q *query, counts []int) { counts[0] = q.pool.cand.andNot(q.pool.full) }

func (slotFilter) reason(_ *query, _, n int) string {
	return plural(n, "has no free slot", "have no free slot")
}

// perMachineFilter keeps machines running fewer than MaxPerMachine
// instances of the job, when the request bounds them. It visits only the
// machines running the job.
type perMachineFilter struct{}

func (perMachineFilter) name() string { return FilterPerMachine }

func (perMachineFilter) causes(q *query) int {
	if q.req.MaxPerMachine > 0 {
		return 1
	}
	return 0
}

func (perMachineFilter) narrow(q *query, counts []int) {
	p := q.pool
	for _, i := range p.jobs[q.req.JobID] {
		if p.cand.has(int(i)) && int(p.jc[i]) >= q.req.MaxPerMachine {
			p.cand.unset(int(i))
			counts[0]++
		}
	}
}

func (perMachineFilter) reason(_ *query, _, n int) string {
	return plural(n, "already runs max_per_machine instances of this job",
		"already run max_per_machine instances of this job")
}
