package matcher

import (
	"maps"
	"slices"
)

// Pool is the set of machines for one planning round, indexed once so that
// each match works on bitsets of machines, a few word operations per 64
// machines per filter, and visits single machines only where it must (the
// attrs and memory filters, the scorers). The scheduler builds one Pool,
// then for each waiting instance calls Matcher.MatchPool and, on success,
// Take.
//
// A Pool is not safe for concurrent use: Take changes it and MatchPool uses
// scratch space inside it. Use one Pool from one goroutine.
type Pool struct {
	// machines is the Pool's own copy of the views; Take changes it. The
	// JobCounts map of machine i is the caller's until owned[i], when Take
	// has replaced it with a copy.
	machines []MachineView
	owned    []bool
	// nameHash is each machine's part of the tie-break (nameHash).
	nameHash []uint64

	keys   index // binary and required keys
	mounts index
	// names maps a machine name to its indexes; built on first use.
	names map[string][]int32
	// attrs holds, per attribute name, a column of every machine's value;
	// built on first use.
	attrs map[string]attrColumn
	// jobs lists, per job id, the machines running at least one of its
	// instances (in no particular order).
	jobs map[uint64][]int32

	// Machine state as bitsets, for the state filters, and as columns, for
	// the memory filter and the scorers. Take keeps them current.
	reserved bitset // ReservedBy != ""
	down     bitset // !Up
	asleep   bitset // !Awake
	// sleepReasons are the distinct AsleepReasons of the asleep machines,
	// sorted; sleepCause[i] is machine i's index among them.
	sleepReasons []string
	sleepCause   []int32
	full         bitset    // Running >= Slots
	memFree      []int64   // MemoryMB - UsedMemoryMB; 0 when MemoryMB is unknown
	load         []float64 // effectiveLoad
	rating       []float64 // normRating(Rating)
	// Resource columns (resources.go): free CPUs, free GPUs of any type
	// and whether there is one, unclaimed disk; ownedRes[i] when machine
	// i's GPUs and UsedGres are the Pool's own copies.
	cpuFree []int64
	gpuFree []int64
	gpuAny  bitset
	// gpuTypes and gresFree hold, per GPU type and per generic resource
	// a request named, each machine's free count of it; built on first
	// use and kept current by Take.
	gpuTypes map[string][]int64
	gresFree map[string][]int64
	// thresholds are, per (column, need) a request has asked for, the
	// machines with at least need free: the capacity filter narrows by
	// them in word operations. Built on first use, at most maxThresholds,
	// and kept current by update.
	thresholds []*threshold
	diskFree   []int64
	ownedRes   []bool

	// changed holds the machines Take or Release changed (Changed), and
	// version counts the changes of Take, Release and Replace (Failures).
	changed bitset
	version uint64

	// Scratch space reused by every MatchPool call.
	q      query
	cand   bitset
	tmp    bitset
	jc     []int32 // instances of the current request's job, per machine
	counts []int
}

// NewPool copies machines and indexes their keys and mounts. The Keys,
// Mounts, Attrs and JobCounts of the views are shared, not copied, and must
// not change while the Pool is in use; the Pool never writes to them. The
// indexes in Results from the Pool are indexes into machines.
func NewPool(machines []MachineView) *Pool {
	n := len(machines)
	w := words(n)
	p := &Pool{
		machines: slices.Clone(machines),
		owned:    make([]bool, n),
		nameHash: make([]uint64, n),
		jobs:     make(map[uint64][]int32),
		reserved: make(bitset, w),
		down:     make(bitset, w),
		asleep:   make(bitset, w),
		full:     make(bitset, w),
		memFree:  make([]int64, n),
		load:     make([]float64, n),
		rating:   make([]float64, n),
		cpuFree:  make([]int64, n),
		gpuFree:  make([]int64, n),
		gpuAny:   make(bitset, w),
		diskFree: make([]int64, n),
		ownedRes: make([]bool, n),
		changed:  make(bitset, w),
		cand:     make(bitset, w),
		tmp:      make(bitset, w),
		jc:       make([]int32, n),
	}
	p.indexSleep()
	p.keys = newIndex(n, func(i int) []string { return p.machines[i].Keys })
	p.mounts = newIndex(n, func(i int) []string { return p.machines[i].Mounts })
	for i := range p.machines {
		m := &p.machines[i]
		if m.ReservedBy != "" {
			p.reserved.set(i)
		}
		if !m.Up {
			p.down.set(i)
		}
		if !m.Awake {
			p.asleep.set(i)
		}
		p.rating[i] = normRating(m.Rating)
		p.nameHash[i] = nameHash(m.Name)
		p.update(i)
		for job, c := range m.JobCounts {
			if c > 0 {
				p.jobs[job] = append(p.jobs[job], int32(i))
			}
		}
	}
	return p
}

// indexSleep lists the distinct reasons of the asleep machines, sorted so
// that rejections come out in the same order whatever the machines'
// order, and gives each asleep machine its reason's index.
func (p *Pool) indexSleep() {
	for i := range p.machines {
		if m := &p.machines[i]; !m.Awake && !slices.Contains(p.sleepReasons, m.AsleepReason) {
			p.sleepReasons = append(p.sleepReasons, m.AsleepReason)
		}
	}
	if len(p.sleepReasons) == 0 {
		return
	}
	slices.Sort(p.sleepReasons)
	p.sleepCause = make([]int32, len(p.machines))
	for i := range p.machines {
		if m := &p.machines[i]; !m.Awake {
			c, _ := slices.BinarySearch(p.sleepReasons, m.AsleepReason)
			p.sleepCause[i] = int32(c)
		}
	}
}

// update recomputes what Take changes of machine i: full, memFree, load
// and the resource columns.
func (p *Pool) update(i int) {
	m := &p.machines[i]
	p.updateResources(i)
	if slotsUsed(m) >= m.Slots {
		p.full.set(i)
	}
	if m.MemoryMB > 0 {
		p.memFree[i] = m.MemoryMB - m.UsedMemoryMB
	}
	p.load[i] = effectiveLoad(m)
	for _, t := range p.thresholds {
		if t.col[i] >= t.need {
			t.set.set(i)
		} else {
			t.set.unset(i)
		}
	}
}

// Len returns the number of machines in the Pool.
func (p *Pool) Len() int { return len(p.machines) }

// Machine returns the Pool's current view of machine i, including what Take
// has added. Its maps belong to the Pool: do not change them. It panics if i
// is out of range.
func (p *Pool) Machine(i int) MachineView { return p.machines[i] }

// Take records that one instance of req was placed on machine i, so later
// matches in this round see it: Running grows by one, UsedCPUs by its
// CPUs, ImposedLoad by req.Load (1 when req.Load is 0), UsedMemoryMB by
// req.MemoryMB, UsedDiskMB by req.DiskMB, UsedGres by its generic
// resources, the lowest free GPUs of its type are marked used, and
// JobCounts[req.JobID] grows by one. The caller's JobCounts map is copied before
// its first change, never written. It panics if i is out of range.
func (p *Pool) Take(i int, req Request) {
	p.noteChanged(i)
	m := &p.machines[i]
	m.ImposedLoad += instanceLoad(req)
	m.UsedMemoryMB += req.MemoryMB
	p.takeResources(i, req)
	m.Running++
	p.update(i)
	if !p.owned[i] {
		m.JobCounts = maps.Clone(m.JobCounts)
		if m.JobCounts == nil {
			m.JobCounts = make(map[uint64]int)
		}
		p.owned[i] = true
	}
	m.JobCounts[req.JobID]++
	if m.JobCounts[req.JobID] == 1 {
		p.jobs[req.JobID] = append(p.jobs[req.JobID], int32(i))
	}
}

// instanceLoad is the load one instance of req imposes: req.Load, or 1 when
// that is 0, negative or NaN.
func instanceLoad(req Request) float64 {
	if req.Load > 0 {
		return req.Load
	}
	return 1
}

// attrColumn is one attribute of every machine: has[i] reports whether
// machine i has it, and then val[i] is its value.
type attrColumn struct {
	val []float64
	has bitset
}

// attr returns the column of the attribute name.
func (p *Pool) attr(name string) attrColumn {
	if c, ok := p.attrs[name]; ok {
		return c
	}
	if p.attrs == nil {
		p.attrs = make(map[string]attrColumn)
	}
	c := attrColumn{val: make([]float64, len(p.machines)), has: make(bitset, words(len(p.machines)))}
	for i := range p.machines {
		if v, ok := p.machines[i].Attrs[name]; ok {
			c.val[i] = v
			c.has.set(i)
		}
	}
	p.attrs[name] = c
	return c
}

// named returns the indexes of the machines called name.
func (p *Pool) named(name string) []int32 {
	if p.names == nil {
		p.names = make(map[string][]int32, len(p.machines))
		for i := range p.machines {
			n := p.machines[i].Name
			p.names[n] = append(p.names[n], int32(i))
		}
	}
	return p.names[name]
}

// Release undoes one Take of req on machine i, for a caller that tried a
// group of instances that must be placed together and found it does not
// fit: the counts Take grew shrink back. It panics if i is out of range
// or no instance of req's job was taken there.
func (p *Pool) Release(i int, req Request) {
	m := &p.machines[i]
	if !p.owned[i] || m.JobCounts[req.JobID] <= 0 {
		panic("matcher: Release without a Take")
	}
	p.noteChanged(i)
	m.Running--
	m.ImposedLoad -= instanceLoad(req)
	m.UsedMemoryMB -= req.MemoryMB
	p.releaseResources(i, req)
	if slotsUsed(m) < m.Slots {
		p.full.unset(i)
	}
	p.update(i)
	if m.JobCounts[req.JobID]--; m.JobCounts[req.JobID] == 0 {
		delete(m.JobCounts, req.JobID)
		p.jobs[req.JobID] = slices.DeleteFunc(p.jobs[req.JobID], func(x int32) bool { return int(x) == i })
	}
}
