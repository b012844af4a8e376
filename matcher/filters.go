package matcher

import "strings"

// filter removes machines that cannot take the instance. keep must not
// allocate: it runs once per machine per Match. reason is called only when
// the filter removed n > 0 machines, and returns a verb phrase agreeing with
// n ("has no free slot", "have no free slot").
type filter interface {
	name() string
	keep(q *query, i int) bool
	reason(q *query, n int) string
}

var (
	_ filter = binaryFilter{}
	_ filter = upFilter{}
	_ filter = slotFilter{}
)

// binaryFilter keeps machines that have one of the request's binary keys;
// every machine passes when the request has the key "*".
type binaryFilter struct{}

func (binaryFilter) name() string { return "binary" }

func (binaryFilter) keep(q *query, i int) bool {
	if q.wildcard {
		return true
	}
	p := q.pool
	if p.indexed() {
		for _, id := range q.keyIDs {
			if p.hasKeyID(i, id) {
				return true
			}
		}
		return false
	}
	for _, k := range q.req.BinaryKeys {
		if p.hasKey(i, k) {
			return true
		}
	}
	return false
}

func (binaryFilter) reason(q *query, n int) string {
	var b strings.Builder
	size := len("lacks binary key (the job names none)")
	for _, k := range q.req.BinaryKeys {
		size += len(k) + 1
	}
	b.Grow(size)
	b.WriteString(plural(n, "lacks binary key ", "lack binary key "))
	if len(q.req.BinaryKeys) == 0 {
		b.WriteString("(the job names none)")
	}
	for i, k := range q.req.BinaryKeys {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(k)
	}
	return b.String()
}

// upFilter keeps machines that are up and awake.
type upFilter struct{}

func (upFilter) name() string { return "up" }

func (upFilter) keep(q *query, i int) bool { return q.pool.machines[i].Up }

func (upFilter) reason(_ *query, n int) string {
	return plural(n, "is down or asleep", "are down or asleep")
}

// slotFilter keeps machines running fewer instances than they have slots.
type slotFilter struct{}

func (slotFilter) name() string { return "slot" }

func (slotFilter) keep(q *query, i int) bool {
	m := &q.pool.machines[i]
	return m.Running < m.Slots
}

func (slotFilter) reason(_ *query, n int) string {
	return plural(n, "has no free slot", "have no free slot")
}
