package lease

import (
	"cmp"
	"slices"

	"github.com/netmgr/netmgr/fsm"
)

// PoolOrder is the pool in the order its machines first joined (by
// CreateIndex, then name): the order in which stubs count the pool when
// they decide whether an outage is the whole control plane's (see
// expirable). Machines are never forgotten and a new one is created at a
// later index, so a machine's position never changes and the first n
// machines of the pool are the same set for every reader.
type PoolOrder struct {
	names []string       // position-1 -> name
	pos   map[string]int // name -> position, from 1; nil when book is set
	// book, when set, holds the positions (Book.Pool): names is a prefix
	// of its order.
	book *Book
}

// NewPoolOrder orders the machines of v.
func NewPoolOrder(v fsm.View) *PoolOrder {
	ms := v.Machines()
	slices.SortFunc(ms, func(a, b *fsm.Machine) int {
		return cmp.Or(cmp.Compare(a.CreateIndex, b.CreateIndex), cmp.Compare(a.Name, b.Name))
	})
	o := &PoolOrder{names: make([]string, len(ms)), pos: make(map[string]int, len(ms))}
	for i, m := range ms {
		o.names[i] = m.Name
		o.pos[m.Name] = i + 1
	}
	return o
}

// Size is how many machines the order holds.
func (o *PoolOrder) Size() int { return len(o.names) }

// Position is the machine's place, from 1; 0 when the order lacks it.
func (o *PoolOrder) Position(name string) int {
	if o.book == nil {
		return o.pos[name]
	}
	if p := o.book.position(name); p <= len(o.names) {
		return p
	}
	return 0
}

// QuorumFrom returns, for each n in 1..size, whether every first-k
// prefix with k >= n holds at least half its machines in support. The
// result has size+2 entries; entry n answers for n (entry size+1 is
// true: no prefix to check).
//
// A stub that knows a pool of k machines keeps restartable work past its
// lease only with the statements of more than half of those k that their
// leases ran out too. A machine that supports (its lease provably holds)
// makes no such statement, so when at least half of every prefix the stub
// may know supports, no such majority exists: see expirable.
func (o *PoolOrder) QuorumFrom(supports func(name string) bool) []bool {
	n := len(o.names)
	from := make([]bool, n+2)
	from[n+1] = true
	ok := make([]bool, n+1)
	count := 0
	for i, name := range o.names {
		if supports(name) {
			count++
		}
		ok[i+1] = 2*count >= i+1
	}
	for k := n; k >= 1; k-- {
		from[k] = ok[k] && from[k+1]
	}
	return from
}
