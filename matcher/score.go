package matcher

import "math"

// scorer ranks the machines that passed every filter. cost must not
// allocate, must be pure, and must return a value in [0, +Inf], never NaN;
// lower is better. The matcher sums the costs of all scorers.
type scorer interface {
	name() string
	cost(q *query, i int) float64
}

var (
	_ scorer = loadScorer{}
	_ scorer = spreadScorer{}
	_ scorer = affinityScorer{}
)

// affinityScorer prefers the machine the request names in Prefer:
//
//	cost = weight when Prefer is set and the machine is another, else 0
//
// A request without Prefer costs 0 everywhere, so it ranks as before.
// With weight 1 the preferred machine wins unless another is more than
// one unit of load less busy. New uses weight 1.
type affinityScorer struct {
	weight float64
}

func (affinityScorer) name() string { return "affinity" }

func (s affinityScorer) cost(q *query, i int) float64 {
	if q.req.Prefer == "" || q.pool.machines[i].Name == q.req.Prefer {
		return 0
	}
	return s.weight
}

// loadScorer prefers the machine with the lowest effective load:
//
//	cost = (Load + ImposedLoad) / Rating
//
// Load is the 1-minute load average and ImposedLoad the sum of the load=
// factors of the instances placed or running there (counted again because a
// just-placed instance has not yet shown up in Load, and because a job's
// declared load is what it will impose once it does); dividing by Rating
// lets a fast machine carry proportionally more: a rating-16 machine with
// load 4 (cost 0.25) beats a rating-1 machine with load 1 (cost 1). A
// Rating that is 0, negative or NaN counts as 1; a Load or ImposedLoad that
// is negative or NaN counts as 0.
type loadScorer struct{}

func (loadScorer) name() string { return "load" }

func (loadScorer) cost(q *query, i int) float64 { return q.pool.load[i] }

// effectiveLoad is loadScorer's formula, with its defaults.
func effectiveLoad(m *MachineView) float64 {
	c := (nonNegative(m.Load) + nonNegative(m.ImposedLoad)) / normRating(m.Rating)
	if math.IsNaN(c) { // +Inf load on a +Inf rating
		return math.Inf(1)
	}
	return c
}

// normRating returns r, or 1 when r is 0, negative or NaN.
func normRating(r float64) float64 {
	if !(r > 0) {
		return 1
	}
	return r
}

// nonNegative returns f, or 0 when f is negative or NaN.
func nonNegative(f float64) float64 {
	if !(f >= 0) {
		return 0
	}
	return f
}

// spreadScorer prefers machines running fewer instances of the same job:
//
//	cost = weight × JobCounts[job] / Rating
//
// With weight 1 an instance of the job already on a machine weighs as much
// as one more unit of load there, so (with the load each instance imposes)
// placing a job's instance raises that machine's cost for the same job twice
// as much as for other jobs. Instances of one job tend to peak together and
// die together when their machine does, so a job spreads unless a machine
// is more than one unit of load per co-located instance less busy. Dividing
// by Rating keeps a fast machine's proportionally larger share. New uses
// weight 1.
type spreadScorer struct {
	weight float64
}

func (spreadScorer) name() string { return "spread" }

func (s spreadScorer) cost(q *query, i int) float64 {
	n := q.pool.jc[i]
	if n <= 0 {
		return 0
	}
	return s.weight * float64(n) / q.pool.rating[i]
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

// nameHash is a machine name's part of the tie-break: FNV-1a of the name
// mixed by murmur3's 64-bit finalizer (FNV-1a alone barely stirs the
// last byte it reads, so machines named node0 ... node9 would not win
// equally often). A Pool computes it once per machine.
func nameHash(name string) uint64 {
	return fmix64(fnvString(fnvOffset, name))
}

// tieHash is the tie-break value of a machine, whose nameHash is nh, for
// the request whose tieSeed is seed: the two mixed again, so that each
// request orders the machines afresh, and the machines of equal cost
// take equal turns over many requests. Among machines of equal cost the
// lowest tieHash wins, then the lowest name, then the lowest index. (It
// costs two multiplications a machine: the fill of a 10,000-machine pool
// weighs every machine on every placement.)
func tieHash(seed, nh uint64) uint64 {
	return fmix64(seed ^ nh)
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
