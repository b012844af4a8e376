package matcher

// Matcher picks a machine for one instance by running a pipeline of filters
// then scorers. It holds no mutable state: one Matcher may be used by many
// goroutines at once (but a Pool may not; see Pool).
type Matcher struct {
	filters []filter
	scorers []scorer
}

// New returns the standard pipeline. Filters run in this order, and a
// machine is counted against the first one that removes it:
//
//  1. binary: the machine has one of the request's binary keys, or the
//     request has "*";
//  2. up: the machine is up and awake;
//  3. slot: the machine runs fewer instances than it has slots.
//
// Scorers then rank the survivors by the sum of their costs, lower first:
//
//  1. load: effective load (Load + Running) / Rating.
//
// Ties go to the lowest FNV-1a hash of (JobID, Instance, machine name),
// finished with murmur3's fmix64 so similar names spread evenly, then to the
// lowest name.
func New() *Matcher {
	return &Matcher{
		filters: []filter{
			binaryFilter{},
			upFilter{},
			slotFilter{},
		},
		scorers: []scorer{
			loadScorer{},
		},
	}
}

// query is the per-Match state the filters and scorers read: the request,
// the machines, and whatever was resolved from the request once rather than
// once per machine.
type query struct {
	req  Request
	pool *Pool
	// wildcard reports that req.BinaryKeys holds "*".
	wildcard bool
	// keyIDs are the interned ids of the request's binary keys that some
	// machine of an indexed Pool has; keys no machine has are dropped.
	keyIDs []uint32
	// seed is the tie-break hash state after JobID and Instance.
	seed uint64
}

// reset prepares q for matching req against p, reusing q's buffers.
func (q *query) reset(req Request, p *Pool) {
	q.req = req
	q.pool = p
	q.wildcard = false
	q.keyIDs = q.keyIDs[:0]
	q.seed = tieSeed(req)
	for _, k := range req.BinaryKeys {
		if k == Wildcard {
			q.wildcard = true
			continue
		}
		if p.indexed() {
			if id, ok := p.ids[k]; ok {
				q.keyIDs = append(q.keyIDs, id)
			}
		}
	}
}

// Match returns the best machine of machines for req, without building an
// index: it searches each machine's sorted Keys. It does not change
// machines. To place many instances against the same machines, build a Pool
// once and use MatchPool and Pool.Take instead.
func (m *Matcher) Match(req Request, machines []MachineView) Result {
	return m.MatchPool(req, wrapPool(machines))
}

// MatchPool returns the best machine of p for req. It does not change the
// machines; call p.Take on the result to count the placement.
func (m *Matcher) MatchPool(req Request, p *Pool) Result {
	q := &p.q
	q.reset(req, p)
	if cap(p.counts) < len(m.filters) {
		p.counts = make([]int, len(m.filters))
	}
	counts := p.counts[:len(m.filters)]
	clear(counts)

	best, bestCost := -1, 0.0
	var bestHash uint64
	bestHashed := false
machines:
	for i := range p.machines {
		for f, flt := range m.filters {
			if !flt.keep(q, i) {
				counts[f]++
				continue machines
			}
		}
		c := 0.0
		for _, s := range m.scorers {
			c += s.cost(q, i)
		}
		switch {
		case best < 0 || c < bestCost:
			best, bestCost, bestHashed = i, c, false
		case c == bestCost:
			if !bestHashed {
				bestHash, bestHashed = tieHash(q.seed, p.machines[best].Name), true
			}
			h := tieHash(q.seed, p.machines[i].Name)
			if h < bestHash || h == bestHash && p.machines[i].Name < p.machines[best].Name {
				best, bestHash = i, h
			}
		}
	}

	res := Result{Machine: best}
	if best >= 0 {
		res.Key = chooseKey(q, best)
	}
	rejecting := 0
	for _, n := range counts {
		if n > 0 {
			rejecting++
		}
	}
	if rejecting > 0 {
		res.Rejections = make([]Rejection, 0, rejecting)
	}
	for f, n := range counts {
		if n > 0 {
			res.Rejections = append(res.Rejections, Rejection{
				Filter: m.filters[f].name(),
				Count:  n,
				Reason: m.filters[f].reason(q, n),
			})
		}
	}
	return res
}

// chooseKey returns the binary key to run on machine i: the first of the
// request's keys the machine has, preferring any exact key over "*".
func chooseKey(q *query, i int) string {
	for _, k := range q.req.BinaryKeys {
		if k != Wildcard && q.pool.hasKey(i, k) {
			return k
		}
	}
	if q.wildcard {
		return Wildcard
	}
	return ""
}
