package matcher

import (
	"maps"
	"math/bits"
	"slices"
	"strconv"
)

// Countable resources: CPUs, GPUs, generic resources, memory and local
// disk. One filter, capacity, checks all a request asks for (a request
// that asks for none pays nothing). The Pool keeps per-machine columns of
// what is free and, per (column, amount) a request has asked for, the set
// of machines with at least that much free, kept current by Take: a check
// is then one AND of bitsets, a few word operations per 64 machines, as
// the key filters are. A round with more distinct requests than the Pool
// keeps sets for checks the rest in one visit of the candidates, reading
// the columns.

var (
	_ filter     = capacityFilter{}
	_ causeNamer = capacityFilter{}
)

// requestCPUs is how many CPUs one instance of req takes: req.CPUs, or 1.
func requestCPUs(req Request) int { return max(req.CPUs, 1) }

// slotsUsed is the slots machine m has in use: the larger of its instance
// count and the CPUs they claim.
func slotsUsed(m *MachineView) int { return max(m.Running, m.UsedCPUs) }

// freeGPUs counts m's free GPUs of type typ ("" for any).
func freeGPUs(m *MachineView, typ string) int {
	n := 0
	for _, g := range m.GPUs {
		if !g.Used && (typ == "" || g.Type == typ) {
			n++
		}
	}
	return n
}

// updateResources recomputes the resource columns of machine i.
func (p *Pool) updateResources(i int) {
	m := &p.machines[i]
	p.cpuFree[i] = int64(m.Slots - slotsUsed(m))
	g := freeGPUs(m, "")
	p.gpuFree[i] = int64(g)
	for typ, col := range p.gpuTypes { // order does not matter: each column is its own
		col[i] = int64(freeGPUs(m, typ))
	}
	for name, col := range p.gresFree {
		col[i] = int64(m.Gres[name] - m.UsedGres[name])
	}
	if g > 0 {
		p.gpuAny.set(i)
	} else {
		p.gpuAny.unset(i)
	}
	if m.DiskMB > 0 {
		p.diskFree[i] = m.DiskMB - m.UsedDiskMB
	} else {
		p.diskFree[i] = 0
	}
}

// gpuTypeFree returns the column of each machine's free GPUs of type typ,
// built on first use and kept current by updateResources.
func (p *Pool) gpuTypeFree(typ string) []int64 {
	if col, ok := p.gpuTypes[typ]; ok {
		return col
	}
	if p.gpuTypes == nil {
		p.gpuTypes = make(map[string][]int64)
	}
	col := make([]int64, len(p.machines))
	for i := range p.machines {
		if p.gpuFree[i] > 0 {
			col[i] = int64(freeGPUs(&p.machines[i], typ))
		}
	}
	p.gpuTypes[typ] = col
	return col
}

// takeResources counts one instance of req on machine i: its CPUs, the
// lowest free GPUs of its type (as the FSM gives them), its generic
// resources and its disk. Slices and maps of the caller are copied before
// their first change.
func (p *Pool) takeResources(i int, req Request) {
	m := &p.machines[i]
	m.UsedCPUs = slotsUsed(m) + requestCPUs(req)
	m.UsedDiskMB += req.DiskMB
	if req.GPUs > 0 || len(req.Gres) > 0 {
		p.ownResources(i)
	}
	need := req.GPUs
	for k := range m.GPUs {
		if need == 0 {
			break
		}
		if g := &m.GPUs[k]; !g.Used && (req.GPUType == "" || g.Type == req.GPUType) {
			g.Used = true
			need--
		}
	}
	for _, g := range req.Gres {
		m.UsedGres[g.Name] += g.Count
	}
}

// releaseResources undoes takeResources: the CPUs, disk and generic
// resources go back, and so do the highest held GPUs of the type.
func (p *Pool) releaseResources(i int, req Request) {
	m := &p.machines[i]
	m.UsedCPUs -= requestCPUs(req)
	m.UsedDiskMB -= req.DiskMB
	need := req.GPUs
	for k := len(m.GPUs) - 1; k >= 0 && need > 0; k-- {
		if g := &m.GPUs[k]; g.Used && (req.GPUType == "" || g.Type == req.GPUType) {
			g.Used = false
			need--
		}
	}
	for _, g := range req.Gres {
		if m.UsedGres[g.Name] -= g.Count; m.UsedGres[g.Name] <= 0 {
			delete(m.UsedGres, g.Name)
		}
	}
}

// ownResources replaces machine i's GPUs and UsedGres with the Pool's own
// copies, once.
func (p *Pool) ownResources(i int) {
	if p.ownedRes[i] {
		return
	}
	m := &p.machines[i]
	m.GPUs = slices.Clone(m.GPUs)
	m.UsedGres = maps.Clone(m.UsedGres)
	if m.UsedGres == nil {
		m.UsedGres = make(map[string]int)
	}
	p.ownedRes[i] = true
}

// threshold is the machines whose col holds at least need.
type threshold struct {
	col  []int64
	need int64
	set  bitset
}

// maxThresholds bounds the thresholds a Pool keeps: a round with more
// distinct requests than this checks the rest machine by machine.
const maxThresholds = 64

// atLeast returns the set of machines whose col holds at least need,
// built on first use; nil when the Pool keeps maxThresholds already.
func (p *Pool) atLeast(col []int64, need int64) bitset {
	for _, t := range p.thresholds {
		if &t.col[0] == &col[0] && t.need == need {
			return t.set
		}
	}
	if len(p.thresholds) >= maxThresholds {
		return nil
	}
	t := &threshold{col: col, need: need, set: make(bitset, words(len(col)))}
	for i, v := range col {
		if v >= need {
			t.set.set(i)
		}
	}
	p.thresholds = append(p.thresholds, t)
	return t.set
}

// capKind names what one capacity check counts.
type capKind uint8

const (
	capGPUs capKind = iota
	capCPUs
	capMemory
	capGres
	capDisk
)

// capCheck is one check of the capacity filter: the machine's free
// amount in col must be at least need. gres indexes req.Gres for capGres.
type capCheck struct {
	kind capKind
	gres int
	col  []int64
	need int64
	// set is the Pool's threshold of col at need, nil when it keeps
	// too many already.
	set bitset
}

// causeNamer is a filter whose causes are reported as filters of their
// own (capacity's: gpus, cpus, memory, gres, disk).
type causeNamer interface {
	causeName(q *query, cause int) string
}

// resetCaps lists the capacity checks of q.req, in cause order, with the
// Pool's columns they read.
func (q *query) resetCaps() {
	p, req := q.pool, q.req
	q.caps = q.caps[:0]
	if req.GPUs > 0 {
		col := p.gpuFree
		if req.GPUType != "" {
			col = p.gpuTypeFree(req.GPUType)
		}
		q.caps = append(q.caps, capCheck{kind: capGPUs, col: col, need: int64(req.GPUs)})
	}
	if req.CPUs > 1 {
		q.caps = append(q.caps, capCheck{kind: capCPUs, col: p.cpuFree, need: int64(req.CPUs)})
	}
	if req.MemoryMB > 0 {
		q.caps = append(q.caps, capCheck{kind: capMemory, col: p.memFree, need: req.MemoryMB})
	}
	for j, g := range req.Gres {
		q.caps = append(q.caps, capCheck{kind: capGres, gres: j, col: p.gresColumn(g.Name), need: int64(g.Count)})
	}
	if req.DiskMB > 0 {
		q.caps = append(q.caps, capCheck{kind: capDisk, col: p.diskFree, need: req.DiskMB})
	}
	if len(p.machines) == 0 {
		return
	}
	for c := range q.caps {
		q.caps[c].set = p.atLeast(q.caps[c].col, q.caps[c].need)
	}
}

// gresColumn returns each machine's free count of generic resource name,
// built on first use and kept current by updateResources.
func (p *Pool) gresColumn(name string) []int64 {
	if col, ok := p.gresFree[name]; ok {
		return col
	}
	if p.gresFree == nil {
		p.gresFree = make(map[string][]int64)
	}
	col := make([]int64, len(p.machines))
	for i := range p.machines {
		m := &p.machines[i]
		col[i] = int64(m.Gres[name] - m.UsedGres[name])
	}
	p.gresFree[name] = col
	return col
}

// capacityFilter keeps machines with free what the request asks for: its
// GPUs (of its type), CPUs (when more than one; the slot filter has
// checked one), memory, each generic resource and disk. One visit of each
// candidate checks them all, in that order; a machine is counted against
// the first it lacks, reported as a filter of that resource's name. A
// GPU request first drops, in word operations, the machines with no free
// GPU at all. A machine of unknown memory or disk has none free.
type capacityFilter struct{}

func (capacityFilter) name() string        { return FilterMemory }
func (capacityFilter) causes(q *query) int { return len(q.caps) }

func (capacityFilter) causeName(q *query, cause int) string {
	switch q.caps[cause].kind {
	case capGPUs:
		return FilterGPUs
	case capCPUs:
		return FilterCPUs
	case capGres:
		return FilterGres
	case capDisk:
		return FilterDisk
	}
	return FilterMemory
}

func (capacityFilter) narrow(q *query, counts []int) {
	p, caps := q.pool, q.caps
	fast := true
	for c := range caps {
		fast = fast && caps[c].set != nil
	}
	if fast { // every check is a threshold the Pool keeps: word operations only
		for c := range caps {
			counts[c] = p.cand.and(caps[c].set)
		}
		return
	}
	if caps[0].kind == capGPUs {
		counts[0] = p.cand.and(p.gpuAny)
	}
	if len(caps) == 1 { // memory alone: no inner loop
		col, need := caps[0].col, caps[0].need
		for w, word := range p.cand {
			for rest := word; rest != 0; rest &= rest - 1 {
				b := bits.TrailingZeros64(rest)
				if col[w*64+b] < need {
					word &^= 1 << uint(b)
					counts[0]++
				}
			}
			p.cand[w] = word
		}
		return
	}
	for w, word := range p.cand {
		for rest := word; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			i := w*64 + b
			for c := range caps {
				if caps[c].col[i] < caps[c].need {
					word &^= 1 << uint(b)
					counts[c]++
					break
				}
			}
		}
		p.cand[w] = word
	}
}

func (capacityFilter) reason(q *query, cause, n int) string {
	c := q.caps[cause]
	switch c.kind {
	case capGPUs:
		what := " free GPUs"
		if q.req.GPUs == 1 {
			what = " free GPU"
		}
		if q.req.GPUType != "" {
			what = " free " + q.req.GPUType + what[len(" free"):]
		}
		return plural(n, "has fewer than ", "have fewer than ") + strconv.Itoa(q.req.GPUs) + what
	case capCPUs:
		return plural(n, "has fewer than ", "have fewer than ") + strconv.Itoa(q.req.CPUs) + " free CPUs"
	case capGres:
		g := q.req.Gres[c.gres]
		return plural(n, "has fewer than ", "have fewer than ") + strconv.Itoa(g.Count) + " free " + g.Name
	case capDisk:
		return plural(n, "lacks ", "lack ") + strconv.FormatInt(q.req.DiskMB, 10) + " MB free disk"
	}
	return plural(n, "lacks ", "lack ") + strconv.FormatInt(q.req.MemoryMB, 10) + " MB free memory"
}
