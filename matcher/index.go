package matcher

import (
	"math/bits"
	"slices"
)

// bitset is a set of machine indexes, one bit per machine.
type bitset []uint64

// words returns how many words a bitset over n machines needs.
func words(n int) int { return (n + 63) / 64 }

// has reports whether i is in s.
func (s bitset) has(i int) bool { return s[i/64]&(1<<(uint(i)%64)) != 0 }

// set adds i to s.
func (s bitset) set(i int) { s[i/64] |= 1 << (uint(i) % 64) }

// unset removes i from s.
func (s bitset) unset(i int) { s[i/64] &^= 1 << (uint(i) % 64) }

// and keeps in s only the machines in o, and returns how many it removed.
func (s bitset) and(o bitset) int {
	n := 0
	for w := range s {
		n += bits.OnesCount64(s[w] &^ o[w])
		s[w] &= o[w]
	}
	return n
}

// andNot removes from s the machines in o, and returns how many it removed.
func (s bitset) andNot(o bitset) int {
	n := 0
	for w := range s {
		n += bits.OnesCount64(s[w] & o[w])
		s[w] &^= o[w]
	}
	return n
}

// count returns the number of machines in s.
func (s bitset) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// fill makes s hold the machines 0 ... n-1.
func (s bitset) fill(n int) {
	for w := range s {
		s[w] = ^uint64(0)
	}
	if r := uint(n) % 64; r != 0 {
		s[len(s)-1] = 1<<r - 1
	}
}

// index maps strings (keys or mounts) to the machines that have them: a
// posting list per string, plus a bitset for strings that at least one
// machine in 64 has, where the bitset costs no more than twice the list.
// Rare strings (a key per machine, say) stay lists, so the index is
// proportional to the number of (machine, string) pairs.
type index struct {
	n     int
	ids   map[string]int32
	post  [][]int32 // ascending machine indexes per id
	dense []bitset  // per id; nil for rare strings
}

// newIndex indexes strs(i) for machines 0 ... n-1. Duplicates are ignored.
func newIndex(n int, strs func(i int) []string) index {
	x := index{n: n, ids: make(map[string]int32)}
	for i := range n {
		for _, s := range strs(i) {
			id, ok := x.ids[s]
			if !ok {
				id = int32(len(x.post))
				x.ids[s] = id
				x.post = append(x.post, nil)
			}
			if p := x.post[id]; len(p) == 0 || p[len(p)-1] != int32(i) {
				x.post[id] = append(p, int32(i))
			}
		}
	}
	x.dense = make([]bitset, len(x.post))
	for id, p := range x.post {
		if len(p)*64 >= n {
			b := make(bitset, words(n))
			for _, i := range p {
				b.set(int(i))
			}
			x.dense[id] = b
		}
	}
	return x
}

// id returns the id of s, or -1 when no machine has s.
func (x *index) id(s string) int32 {
	if id, ok := x.ids[s]; ok {
		return id
	}
	return -1
}

// has reports whether machine i has the string of id (-1: no machine has).
func (x *index) has(i int, id int32) bool {
	if id < 0 {
		return false
	}
	if d := x.dense[id]; d != nil {
		return d.has(i)
	}
	_, ok := slices.BinarySearch(x.post[id], int32(i))
	return ok
}

// orInto adds to dst the machines that have the string of id.
func (x *index) orInto(dst bitset, id int32) {
	if id < 0 {
		return
	}
	if d := x.dense[id]; d != nil {
		for w := range dst {
			dst[w] |= d[w]
		}
		return
	}
	for _, i := range x.post[id] {
		dst.set(int(i))
	}
}

// andInto removes from dst the machines that lack the string of id. tmp is
// scratch space of dst's length.
func (x *index) andInto(dst, tmp bitset, id int32) {
	if id < 0 {
		clear(dst)
		return
	}
	if d := x.dense[id]; d != nil {
		for w := range dst {
			dst[w] &= d[w]
		}
		return
	}
	clear(tmp)
	for _, i := range x.post[id] {
		if dst.has(int(i)) {
			tmp.set(int(i))
		}
	}
	copy(dst, tmp)
}
