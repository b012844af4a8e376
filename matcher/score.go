package matcher

import "math"

// scorer ranks the machines that passed every filter. cost must not
// allocate, must be pure, and must return a value in [0, +Inf], never NaN;
// lower is better. The matcher sums the costs of all scorers.
type scorer interface {
	name() string
	cost(q *query, i int) float64
}

var _ scorer = loadScorer{}

// loadScorer prefers the machine with the lowest effective load:
//
//	cost = (Load + Running) / Rating
//
// Load is the 1-minute load average and Running the instances placed or
// running there (counted again because a just-placed instance has not yet
// shown up in Load); dividing by Rating lets a fast machine carry
// proportionally more: a rating-16 machine with load 4 (cost 0.25) beats a
// rating-1 machine with load 1 (cost 1). A Rating that is 0, negative or NaN
// counts as 1; a Load that is negative or NaN counts as 0, as does a
// negative Running.
type loadScorer struct{}

func (loadScorer) name() string { return "load" }

func (loadScorer) cost(q *query, i int) float64 {
	return effectiveLoad(&q.pool.machines[i])
}

// effectiveLoad is loadScorer's formula.
func effectiveLoad(m *MachineView) float64 {
	load := m.Load
	if !(load >= 0) { // negative or NaN
		load = 0
	}
	rating := m.Rating
	if !(rating > 0) { // zero, negative or NaN
		rating = 1
	}
	running := float64(max(m.Running, 0))
	c := (load + running) / rating
	if math.IsNaN(c) { // +Inf load on a +Inf rating
		return math.Inf(1)
	}
	return c
}

// FNV-1a, 64 bit (hash/fnv without the interface, so it does not allocate).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvUint64 folds v into h, little-endian byte by byte.
func fnvUint64(h, v uint64) uint64 {
	for range 8 {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

// fnvString folds s into h.
func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// tieSeed is the FNV-1a state after the request's JobID and Instance, each as
// 8 little-endian bytes.
func tieSeed(req Request) uint64 {
	return fnvUint64(fnvUint64(fnvOffset, req.JobID), uint64(int64(req.Instance)))
}

// tieHash is FNV-1a of (JobID, Instance, machine name), continuing from
// tieSeed, then mixed by murmur3's 64-bit finalizer: FNV-1a alone barely
// stirs the last byte it reads, so machines named node0 ... node9 would not
// win equally often. Among machines of equal cost the lowest tieHash wins,
// then the lowest name, then the lowest index.
func tieHash(seed uint64, name string) uint64 {
	return fmix64(fnvString(seed, name))
}

// fmix64 is murmur3's 64-bit finalizer: every input bit affects every
// output bit.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
