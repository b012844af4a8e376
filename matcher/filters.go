package matcher

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Requirement filters: what a machine must be to run the job at all.

var (
	_ filter = binaryFilter{}
	_ filter = keysFilter{}
	_ filter = attrsFilter{}
	_ filter = mountsFilter{}
	_ filter = machinesFilter{}
)

// binaryFilter keeps machines that have one of the request's binary keys;
// every machine passes when the request has the key "*".
type binaryFilter struct{}

func (binaryFilter) name() string      { return FilterBinary }
func (binaryFilter) causes(*query) int { return 1 }

func (binaryFilter) narrow(q *query, counts []int) {
	if q.wildcard {
		return
	}
	p := q.pool
	clear(p.tmp)
	for _, id := range q.binIDs {
		p.keys.orInto(p.tmp, id)
	}
	counts[0] = p.cand.and(p.tmp)
}

func (binaryFilter) reason(q *query, _, n int) string {
	var b strings.Builder
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

// keysFilter keeps machines that have every required key. A machine is
// counted against the first key, in request order, that it lacks, so that
// machines lacking different keys read "8 machines lack key mathlab; 2 lack
// key fpu".
type keysFilter struct{}

func (keysFilter) name() string        { return FilterKeys }
func (keysFilter) causes(q *query) int { return len(q.req.Keys) }

func (keysFilter) narrow(q *query, counts []int) {
	narrowIndex(q.pool, &q.pool.keys, q.keyIDs, counts)
}

func (keysFilter) reason(q *query, cause, n int) string {
	return plural(n, "lacks key ", "lack key ") + q.req.Keys[cause]
}

// narrowIndex keeps in p.cand the machines that have every string of ids in
// x, counting in counts[j] the machines whose first missing string is j.
func narrowIndex(p *Pool, x *index, ids []int32, counts []int) {
	n := p.cand.count()
	for j, id := range ids {
		if n == 0 {
			return
		}
		x.andInto(p.cand, p.tmp, id)
		after := p.cand.count()
		counts[j] = n - after
		n = after
	}
}

// attrsFilter keeps machines whose attributes meet every requirement. Each
// requirement j has two causes: 2j, the comparison failed, and 2j+1, the
// machine lacks the attribute. A machine is counted against the first
// requirement, in request order, that it fails.
type attrsFilter struct{}

func (attrsFilter) name() string        { return FilterAttrs }
func (attrsFilter) causes(q *query) int { return 2 * len(q.req.Requirements) }

func (attrsFilter) narrow(q *query, counts []int) {
	cand := q.pool.cand
	for j, r := range q.req.Requirements {
		col := &q.attrs[j]
		counts[2*j+1] = cand.and(col.has)
		for w, word := range cand {
			for rest := word; rest != 0; rest &= rest - 1 {
				b := bits.TrailingZeros64(rest)
				if !compare(col.val[w*64+b], r.Op, r.Value) {
					word &^= 1 << uint(b)
					counts[2*j]++
				}
			}
			cand[w] = word
		}
	}
}

func (attrsFilter) reason(q *query, cause, n int) string {
	r := q.req.Requirements[cause/2]
	if cause%2 == 1 {
		return plural(n, "lacks attribute ", "lack attribute ") + r.Attr
	}
	neg, ok := negate(r.Op)
	if !ok {
		return "cannot meet " + r.Attr + r.Op + formatNumber(r.Value) + " (unknown operator)"
	}
	return plural(n, "has ", "have ") + r.Attr + neg + formatNumber(r.Value)
}

// compare reports whether v op w holds; an unknown op never holds.
func compare(v float64, op string, w float64) bool {
	switch op {
	case ">":
		return v > w
	case ">=":
		return v >= w
	case "<":
		return v < w
	case "<=":
		return v <= w
	case "==":
		return v == w
	case "!=":
		return v != w
	}
	return false
}

// negate returns the operator that holds when op does not (for numbers that
// are not NaN), so that a failed mem>10 reads "mem<=10".
func negate(op string) (string, bool) {
	switch op {
	case ">":
		return "<=", true
	case ">=":
		return "<", true
	case "<":
		return ">=", true
	case "<=":
		return ">", true
	case "==":
		return "!=", true
	case "!=":
		return "==", true
	}
	return "", false
}

// formatNumber prints v as the job language writes it: 10, 0.5, 1e+30.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// mountsFilter keeps machines that have every required mount. A machine is
// counted against the first mount, in request order, that it lacks.
type mountsFilter struct{}

func (mountsFilter) name() string        { return FilterMounts }
func (mountsFilter) causes(q *query) int { return len(q.req.Mounts) }

func (mountsFilter) narrow(q *query, counts []int) {
	narrowIndex(q.pool, &q.pool.mounts, q.mountIDs, counts)
}

func (mountsFilter) reason(q *query, cause, n int) string {
	return plural(n, "lacks mount ", "lack mount ") + q.req.Mounts[cause]
}

// machinesFilter keeps the machines named in the request, when it names
// any.
type machinesFilter struct{}

func (machinesFilter) name() string { return FilterMachines }

func (machinesFilter) causes(q *query) int {
	if len(q.req.Machines) == 0 {
		return 0
	}
	return 1
}

func (machinesFilter) narrow(q *query, counts []int) {
	p := q.pool
	clear(p.tmp)
	for _, name := range q.req.Machines {
		for _, i := range p.named(name) {
			p.tmp.set(int(i))
		}
	}
	counts[0] = p.cand.and(p.tmp)
}

func (machinesFilter) reason(_ *query, _, n int) string {
	return plural(n, "is not named in machines=", "are not named in machines=")
}
