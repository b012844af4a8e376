package matcher

import "slices"

// Pool is the set of machines for one planning round, with their keys
// indexed once so that each Match costs a few bit tests per machine. The
// scheduler builds one Pool, then for each waiting instance calls
// Matcher.MatchPool and, on success, Take.
//
// A Pool is not safe for concurrent use: Take changes it and MatchPool uses
// scratch space inside it. Use one Pool from one goroutine.
type Pool struct {
	// machines is the Pool's own copy of the views; Take changes Running.
	machines []MachineView

	// ids interns every key seen on any machine; nil when the Pool wraps a
	// slice without an index (Matcher.Match), in which case filters search
	// the sorted MachineView.Keys instead.
	ids map[string]uint32
	// bits holds one bitset of key ids per machine, stride words each.
	bits   []uint64
	stride int

	// q and counts are scratch space reused by every MatchPool call.
	q      query
	counts []int
}

// NewPool copies machines and indexes their keys. The Keys slices are shared,
// not copied, and must not change while the Pool is in use; they need not be
// sorted. The indexes in Results from the Pool are indexes into machines.
func NewPool(machines []MachineView) *Pool {
	p := &Pool{
		machines: slices.Clone(machines),
		ids:      make(map[string]uint32),
	}
	for i := range p.machines {
		for _, k := range p.machines[i].Keys {
			if _, ok := p.ids[k]; !ok {
				p.ids[k] = uint32(len(p.ids))
			}
		}
	}
	p.stride = (len(p.ids) + 63) / 64
	p.bits = make([]uint64, p.stride*len(p.machines))
	for i := range p.machines {
		row := p.row(i)
		for _, k := range p.machines[i].Keys {
			id := p.ids[k]
			row[id/64] |= 1 << (id % 64)
		}
	}
	return p
}

// wrapPool returns an unindexed Pool over machines, without copying them.
func wrapPool(machines []MachineView) *Pool {
	return &Pool{machines: machines}
}

// Len returns the number of machines in the Pool.
func (p *Pool) Len() int { return len(p.machines) }

// Machine returns the Pool's current view of machine i, including the
// instances Take has added to Running. It panics if i is out of range.
func (p *Pool) Machine(i int) MachineView { return p.machines[i] }

// Take records that one more instance was placed on machine i, so later
// matches in this round see its extra load and one slot fewer. It panics if
// i is out of range.
func (p *Pool) Take(i int) { p.machines[i].Running++ }

// indexed reports whether the Pool has a key index.
func (p *Pool) indexed() bool { return p.ids != nil }

// row returns machine i's key bitset; only for indexed Pools.
func (p *Pool) row(i int) []uint64 { return p.bits[i*p.stride : (i+1)*p.stride] }

// hasKeyID reports whether machine i has the interned key id.
func (p *Pool) hasKeyID(i int, id uint32) bool {
	return p.bits[i*p.stride+int(id/64)]&(1<<(id%64)) != 0
}

// hasKey reports whether machine i has key k.
func (p *Pool) hasKey(i int, k string) bool {
	if !p.indexed() {
		_, ok := slices.BinarySearch(p.machines[i].Keys, k)
		return ok
	}
	id, ok := p.ids[k]
	return ok && p.hasKeyID(i, id)
}
