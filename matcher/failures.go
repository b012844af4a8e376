package matcher

import "strconv"

// Failures remembers, for one Pool, the requests that found no machine on
// it as it is now, and their Results. A request equal to one of them in
// everything a failed match reads fails the same way, so a pass with a
// thousand like jobs waiting for capacity matches one: the JobID,
// Instance and Prefer of a request are read only by the scorers (which a
// failed match never reaches), the tie-break and the per-machine filter,
// and a request with MaxPerMachine is not remembered. Any change to the
// Pool (Take, Release, Replace) forgets them all. The zero value is
// ready to use; use one Failures with one Pool.
type Failures struct {
	version uint64
	failed  map[string]Result
	key     []byte
	// owners says the Pool has a reserved machine: only then does a
	// failed match read the request's Owner (the reservation filter).
	owners bool
}

// MatchPoolRemembering is MatchPool, answered from f when a request like
// req failed on p as p is now, and remembered in f when it fails.
func (m *Matcher) MatchPoolRemembering(req Request, p *Pool, f *Failures) Result {
	if req.MaxPerMachine > 0 {
		return m.MatchPool(req, p)
	}
	if f.version != p.version || f.failed == nil {
		clear(f.failed)
		f.version = p.version
		f.owners = p.reserved.count() > 0
	}
	f.key = f.appendKey(f.key[:0], &req)
	if res, ok := f.failed[string(f.key)]; ok { // no copy of the key to look it up
		return res
	}
	res := m.MatchPool(req, p)
	if res.Machine < 0 {
		if f.failed == nil {
			f.failed = make(map[string]Result)
		}
		f.failed[string(f.key)] = res
	}
	return res
}

// appendKey appends to b everything of req a failed match reads, each
// string prefixed by its length so that no two requests share a key.
func (f *Failures) appendKey(b []byte, req *Request) []byte {
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	list := func(ss []string) {
		b = strconv.AppendInt(b, int64(len(ss)), 10)
		b = append(b, '[')
		for _, s := range ss {
			str(s)
		}
	}
	num := func(n int64) {
		b = strconv.AppendInt(b, n, 10)
		b = append(b, ',')
	}
	float := func(x float64) {
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
		b = append(b, ',')
	}
	if f.owners {
		str(req.Owner)
	}
	list(req.BinaryKeys)
	list(req.Keys)
	list(req.Mounts)
	list(req.Machines)
	num(int64(len(req.Requirements)))
	for _, r := range req.Requirements {
		str(r.Attr)
		str(r.Op)
		float(r.Value)
	}
	num(req.MemoryMB)
	float(req.Load)
	num(int64(req.CPUs))
	num(int64(req.GPUs))
	str(req.GPUType)
	num(int64(len(req.Gres)))
	for _, g := range req.Gres {
		str(g.Name)
		num(int64(g.Count))
	}
	num(req.DiskMB)
	return b
}
