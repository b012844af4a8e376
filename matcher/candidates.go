package matcher

import "math/bits"

// Candidates returns, in index order, the machines of p that meet req's
// requirements (binary key, keys, attributes, mounts, named machines,
// reservation) whatever their state now: the machines req competes for.
// The scheduler uses it to find what the head of the queue is waiting for,
// so a backfilled job can be kept off it. It does not change p.
func (m *Matcher) Candidates(req Request, p *Pool) []int {
	q := &p.q
	q.reset(req, p)
	p.loadJobCounts(req.JobID)
	defer p.clearJobCounts(req.JobID)

	total := 0
	for _, f := range m.filters[:m.nrequire] {
		total += f.causes(q)
	}
	if cap(p.counts) < total {
		p.counts = make([]int, total)
	}
	counts := p.counts[:total]
	clear(counts)

	p.cand.fill(len(p.machines))
	off := 0
	for _, f := range m.filters[:m.nrequire] {
		if c := f.causes(q); c > 0 {
			f.narrow(q, counts[off:off+c])
			off += c
		}
	}
	out := make([]int, 0, p.cand.count())
	for w, word := range p.cand {
		for word != 0 {
			out = append(out, w*64+bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
	return out
}
