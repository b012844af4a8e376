package matcher

import (
	"math/bits"
	"slices"
)

// Replace makes m the view of machine i, as if the Pool had been built
// with it: every index and column is brought up to date for i alone,
// except the key and mount indexes, rebuilt whole when m's keys or mounts
// differ from the old view's (a rare change: a machine's facts or the
// database). Take's changes to i are forgotten. A leader that keeps a Pool
// between passes replaces the machines that changed since the last one
// and those the last pass took from (Changed), instead of building a Pool
// of every machine again.
//
// m's maps and slices are shared as NewPool shares them, and must not
// change while the Pool holds them: the JobCounts map in particular,
// from which the Pool knows where each job runs. It panics if i is out
// of range.
func (p *Pool) Replace(i int, m MachineView) {
	p.version++
	old := &p.machines[i]
	for job, c := range old.JobCounts {
		if c > 0 {
			p.jobs[job] = slices.DeleteFunc(p.jobs[job], func(x int32) bool { return int(x) == i })
			if len(p.jobs[job]) == 0 {
				delete(p.jobs, job)
			}
		}
	}
	rekey := !slices.Equal(old.Keys, m.Keys)
	remount := !slices.Equal(old.Mounts, m.Mounts)
	resleep := !old.Awake || !m.Awake
	if old.Name != m.Name {
		p.names = nil // rebuilt on first use
		p.nameHash[i] = nameHash(m.Name)
	}
	p.machines[i] = m
	p.owned[i] = false
	p.ownedRes[i] = false
	if rekey {
		p.keys = newIndex(len(p.machines), func(i int) []string { return p.machines[i].Keys })
	}
	if remount {
		p.mounts = newIndex(len(p.machines), func(i int) []string { return p.machines[i].Mounts })
	}
	if resleep {
		p.sleepReasons, p.sleepCause = nil, nil
		p.indexSleep()
	}
	setBit(p.reserved, i, m.ReservedBy != "")
	setBit(p.down, i, !m.Up)
	setBit(p.asleep, i, !m.Awake)
	p.rating[i] = normRating(m.Rating)
	p.full.unset(i)
	p.memFree[i] = 0
	p.update(i)
	for job, c := range m.JobCounts {
		if c > 0 {
			p.jobs[job] = append(p.jobs[job], int32(i))
		}
	}
	for name, c := range p.attrs { // each column is its own: order does not matter
		v, ok := m.Attrs[name]
		c.val[i] = 0
		if ok {
			c.val[i] = v
		}
		setBit(c.has, i, ok)
	}
	p.changed.unset(i)
}

// Changed returns the machines Take or Release changed since each was
// last built or replaced, in ascending order, and forgets them: a Pool
// kept between passes replaces them with their views before the next.
func (p *Pool) Changed() []int {
	var out []int
	for w, word := range p.changed {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, w*64+b)
			word &= word - 1
		}
	}
	clear(p.changed)
	return out
}

// noteChanged records that Take or Release changed machine i (Changed).
func (p *Pool) noteChanged(i int) {
	p.changed.set(i)
	p.version++
}

// setBit puts i in s when on, takes it out otherwise.
func setBit(s bitset, i int, on bool) {
	if on {
		s.set(i)
	} else {
		s.unset(i)
	}
}
