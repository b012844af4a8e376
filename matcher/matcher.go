package matcher

import "math/bits"

// Matcher picks a machine for one instance by running a pipeline of filters
// then scorers. It holds no mutable state: one Matcher may be used by many
// goroutines at once (but a Pool may not; see Pool).
type Matcher struct {
	// filters narrow the set of candidate machines in order: first the
	// nrequire requirement filters (a machine that passes them "matches"
	// the job, see Result.Matching), then the state filters.
	filters  []filter
	nrequire int
	scorers  []scorer
	// unpreferred is scorers without affinityScorer, which costs 0 on
	// every machine for a request without Prefer: most requests skip a
	// call per candidate.
	unpreferred []scorer
}

// New returns the standard pipeline. Filters run in this order, and a
// machine is counted against the first one that turns it down:
//
//  1. binary: the machine has one of the request's binary keys, or the
//     request has "*";
//  2. keys: it has every required key;
//  3. attrs: its attributes meet every requirement (mem>10);
//  4. mounts: it has every required mount;
//  5. machines: it is one of the named machines, when machines= names any;
//  6. reservation: it is not reserved, or reserved by the job's owner;
//  7. up: it is in the pool and not draining;
//  8. awake: it is not asleep (its rejections counted per reason);
//  9. slot: it runs fewer instances than it has slots;
//  10. per-machine: it runs fewer than max_per_machine instances of the job;
//  11. capacity: it has free what the instance asks for, checked in this
//     order and each counted as its own filter in Rejections: gpus (of
//     its type), cpus (when more than one), memory, each gres, disk.
//
// Each filter narrows a bitset of candidate machines and counts what it
// removed from the change in its size. Most are word operations against
// bitsets the Pool keeps (binary, keys, mounts, machines, reservation, up,
// awake, slot); attrs and capacity visit only the machines still in the
// set (capacity, when the request asks for GPUs, only those with a free
// GPU), per-machine only those running the job. Capacity checks every
// resource the request asks for in one visit of each machine, reading
// columns the Pool keeps, and is not run when it asks for none.
//
// Scorers then rank the survivors by the sum of their costs, lower first:
//
//  1. load: effective load (Load + ImposedLoad) / Rating;
//  2. spread: 1.0 × (instances of this job on the machine) / Rating;
//  3. affinity: 1.0 on every machine but the request's Prefer, when set.
//
// Ties go to the lowest tie hash (murmur3's fmix64 of the FNV-1a hash of
// (JobID, Instance) and the machine name's own hash; see tieHash), so
// that similar names spread evenly, then to the lowest name, then to the
// lowest index.
func New() *Matcher {
	return newMatcher(
		[]filter{ // requirements
			binaryFilter{},
			keysFilter{},
			attrsFilter{},
			mountsFilter{},
			machinesFilter{},
		},
		[]filter{ // state
			reservationFilter{},
			upFilter{},
			awakeFilter{},
			slotFilter{},
			perMachineFilter{},
			capacityFilter{},
		},
		[]scorer{
			loadScorer{},
			spreadScorer{weight: 1.0},
			affinityScorer{weight: 1.0},
		},
	)
}

// newMatcher assembles a pipeline; New is the one netmgr uses.
func newMatcher(require, state []filter, scorers []scorer) *Matcher {
	var unpreferred []scorer
	for _, s := range scorers {
		if _, ok := s.(affinityScorer); !ok {
			unpreferred = append(unpreferred, s)
		}
	}
	return &Matcher{
		filters:     append(require[:len(require):len(require)], state...),
		nrequire:    len(require),
		scorers:     scorers,
		unpreferred: unpreferred,
	}
}

// filter removes from q.pool.cand the machines that cannot take the
// instance, adding to counts[cause] how many it removed for each cause.
// causes is the number of distinct causes for this request; a filter with
// none cannot remove any machine and is not called. reason returns a verb
// phrase agreeing with n for one cause ("has no free slot", "have no free
// slot"). narrow must not allocate.
type filter interface {
	name() string
	causes(q *query) int
	narrow(q *query, counts []int)
	reason(q *query, cause, n int) string
}

// query is the per-Match state the filters and scorers read: the request,
// the Pool, and what was resolved from the request once rather than once per
// machine.
type query struct {
	req  Request
	pool *Pool
	// wildcard reports that req.BinaryKeys holds "*".
	wildcard bool
	// binIDs, keyIDs and mountIDs are the index ids of req.BinaryKeys
	// (without "*"), req.Keys and req.Mounts; -1 for one no machine has.
	binIDs, keyIDs, mountIDs []int32
	// attrs are the Pool's columns of the attributes of req.Requirements.
	attrs []attrColumn
	// caps are the capacity filter's checks for this request, one per
	// resource it asks for, in cause order (resources.go).
	caps []capCheck
	// seed is the tie-break hash state after JobID and Instance.
	seed uint64
}

// reset prepares q for matching req against p, reusing q's buffers.
func (q *query) reset(req Request, p *Pool) {
	q.req = req
	q.pool = p
	q.wildcard = false
	q.binIDs = q.binIDs[:0]
	for _, k := range req.BinaryKeys {
		if k == Wildcard {
			q.wildcard = true
			continue
		}
		q.binIDs = append(q.binIDs, p.keys.id(k))
	}
	q.keyIDs = q.keyIDs[:0]
	for _, k := range req.Keys {
		q.keyIDs = append(q.keyIDs, p.keys.id(k))
	}
	q.mountIDs = q.mountIDs[:0]
	for _, k := range req.Mounts {
		q.mountIDs = append(q.mountIDs, p.mounts.id(k))
	}
	q.attrs = q.attrs[:0]
	for _, r := range req.Requirements {
		q.attrs = append(q.attrs, p.attr(r.Attr))
	}
	q.resetCaps()
	q.seed = tieSeed(req)
}

// Match returns the best machine of machines for req. It builds a Pool for
// the one call, so it costs as much as NewPool; it does not change machines.
// To place many instances against the same machines, build a Pool once and
// use MatchPool and Pool.Take instead.
func (m *Matcher) Match(req Request, machines []MachineView) Result {
	return m.MatchPool(req, NewPool(machines))
}

// MatchPool returns the best machine of p for req. It does not change the
// machines; call p.Take on the result to count the placement. Once the Pool
// has seen the request's attribute names and machine names (it indexes them
// on first use), it allocates only the Result's Rejections.
func (m *Matcher) MatchPool(req Request, p *Pool) Result {
	q := &p.q
	q.reset(req, p)
	p.loadJobCounts(req.JobID)
	defer p.clearJobCounts(req.JobID)

	total := 0
	for _, f := range m.filters {
		total += f.causes(q)
	}
	if cap(p.counts) < total {
		p.counts = make([]int, total)
	}
	counts := p.counts[:total]
	clear(counts)

	p.cand.fill(len(p.machines))
	off, matching := 0, 0
	for j, f := range m.filters {
		if j == m.nrequire {
			matching = p.cand.count()
		}
		if c := f.causes(q); c > 0 {
			f.narrow(q, counts[off:off+c])
			off += c
		}
	}
	if len(m.filters) == m.nrequire {
		matching = p.cand.count()
	}

	scorers := m.scorers
	if q.req.Prefer == "" {
		scorers = m.unpreferred
	}
	best, bestCost := -1, 0.0
	var bestHash uint64
	bestHashed := false
	for w, word := range p.cand {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			c := 0.0
			for _, s := range scorers {
				c += s.cost(q, i)
			}
			switch {
			case best < 0 || c < bestCost:
				best, bestCost, bestHashed = i, c, false
			case c == bestCost:
				if !bestHashed {
					bestHash, bestHashed = tieHash(q.seed, p.nameHash[best]), true
				}
				h := tieHash(q.seed, p.nameHash[i])
				if h < bestHash || h == bestHash && p.machines[i].Name < p.machines[best].Name {
					best, bestHash = i, h
				}
			}
		}
	}

	res := Result{Machine: best, Matching: matching}
	if best >= 0 {
		res.Key = chooseKey(q, best)
	}
	res.Rejections = m.rejections(q, counts)
	return res
}

// rejections turns counts into Rejections, in pipeline order.
func (m *Matcher) rejections(q *query, counts []int) []Rejection {
	n := 0
	for _, c := range counts {
		if c > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Rejection, 0, n)
	off := 0
	for _, f := range m.filters {
		c := f.causes(q)
		named, perCause := f.(causeNamer)
		for cause, k := range counts[off : off+c] {
			if k > 0 {
				name := f.name()
				if perCause {
					name = named.causeName(q, cause)
				}
				out = append(out, Rejection{Filter: name, Count: k, Reason: f.reason(q, cause, k)})
			}
		}
		off += c
	}
	return out
}

// chooseKey returns the binary key to run on machine i: the first of the
// request's keys the machine has, preferring any exact key over "*".
func chooseKey(q *query, i int) string {
	for _, k := range q.req.BinaryKeys {
		if k != Wildcard && q.pool.keys.has(i, q.pool.keys.id(k)) {
			return k
		}
	}
	if q.wildcard {
		return Wildcard
	}
	return ""
}

// loadJobCounts fills p.jc with the instances of job on each machine.
func (p *Pool) loadJobCounts(job uint64) {
	for _, i := range p.jobs[job] {
		p.jc[i] = int32(p.machines[i].JobCounts[job])
	}
}

// clearJobCounts undoes loadJobCounts.
func (p *Pool) clearJobCounts(job uint64) {
	for _, i := range p.jobs[job] {
		p.jc[i] = 0
	}
}
