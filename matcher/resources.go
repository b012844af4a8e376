package matcher

import (
	"maps"
	"math/bits"
	"slices"
	"strconv"
)

// Countable resources: CPUs, GPUs, generic resources and local disk. Each
// has a filter that visits the surviving candidates only when the request
// asks for the resource (a request that asks for none pays nothing), and
// the Pool keeps per-machine columns of what is free so that a visit is an
// array read. The GPU filter first drops, in word operations, the
// machines with no free GPU at all, so a GPU request visits only the GPU
// machines.

var (
	_ filter = gpuFilter{}
	_ filter = cpuFilter{}
	_ filter = gresFilter{}
	_ filter = diskFilter{}
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
	p.cpuFree[i] = int32(m.Slots - slotsUsed(m))
	g := freeGPUs(m, "")
	p.gpuFree[i] = int32(g)
	for typ, col := range p.gpuTypes { // order does not matter: each column is its own
		col[i] = int32(freeGPUs(m, typ))
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
func (p *Pool) gpuTypeFree(typ string) []int32 {
	if col, ok := p.gpuTypes[typ]; ok {
		return col
	}
	if p.gpuTypes == nil {
		p.gpuTypes = make(map[string][]int32)
	}
	col := make([]int32, len(p.machines))
	for i := range p.machines {
		if p.gpuFree[i] > 0 {
			col[i] = int32(freeGPUs(&p.machines[i], typ))
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

// gpuFilter keeps machines with the request's GPUs free (of its type,
// when it names one).
type gpuFilter struct{}

func (gpuFilter) name() string { return FilterGPUs }

func (gpuFilter) causes(q *query) int {
	if q.req.GPUs > 0 {
		return 1
	}
	return 0
}

func (gpuFilter) narrow(q *query, counts []int) {
	p := q.pool
	counts[0] = p.cand.and(p.gpuAny)
	need, free := int32(q.req.GPUs), p.gpuFree
	if q.req.GPUType != "" {
		free = q.gpuFree
	}
	for w, word := range p.cand {
		for rest := word; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			if free[w*64+b] < need {
				word &^= 1 << uint(b)
				counts[0]++
			}
		}
		p.cand[w] = word
	}
}

func (gpuFilter) reason(q *query, _, n int) string {
	what := " free GPUs"
	if q.req.GPUs == 1 {
		what = " free GPU"
	}
	if q.req.GPUType != "" {
		what = " free " + q.req.GPUType + what[len(" free"):]
	}
	return plural(n, "has fewer than ", "have fewer than ") + strconv.Itoa(q.req.GPUs) + what
}

// cpuFilter keeps machines with the request's CPUs free, when it asks
// for more than one (the slot filter has already kept those with one).
type cpuFilter struct{}

func (cpuFilter) name() string { return FilterCPUs }

func (cpuFilter) causes(q *query) int {
	if q.req.CPUs > 1 {
		return 1
	}
	return 0
}

func (cpuFilter) narrow(q *query, counts []int) {
	p := q.pool
	need := int32(q.req.CPUs)
	for w, word := range p.cand {
		for rest := word; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			if p.cpuFree[w*64+b] < need {
				word &^= 1 << uint(b)
				counts[0]++
			}
		}
		p.cand[w] = word
	}
}

func (cpuFilter) reason(q *query, _, n int) string {
	return plural(n, "has fewer than ", "have fewer than ") + strconv.Itoa(q.req.CPUs) + " free CPUs"
}

// gresFilter keeps machines with every requested generic resource free; a
// machine is counted against the first, in request order, it lacks.
type gresFilter struct{}

func (gresFilter) name() string        { return FilterGres }
func (gresFilter) causes(q *query) int { return len(q.req.Gres) }

func (gresFilter) narrow(q *query, counts []int) {
	p := q.pool
	for w, word := range p.cand {
		for rest := word; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			m := &p.machines[w*64+b]
			for j, g := range q.req.Gres {
				if m.Gres[g.Name]-m.UsedGres[g.Name] < g.Count {
					word &^= 1 << uint(b)
					counts[j]++
					break
				}
			}
		}
		p.cand[w] = word
	}
}

func (gresFilter) reason(q *query, cause, n int) string {
	g := q.req.Gres[cause]
	return plural(n, "has fewer than ", "have fewer than ") + strconv.Itoa(g.Count) + " free " + g.Name
}

// diskFilter keeps machines with the request's disk unclaimed: DiskMB
// minus UsedDiskMB at least the request's DiskMB. A machine whose disk is
// unknown has none.
type diskFilter struct{}

func (diskFilter) name() string { return FilterDisk }

func (diskFilter) causes(q *query) int {
	if q.req.DiskMB > 0 {
		return 1
	}
	return 0
}

func (diskFilter) narrow(q *query, counts []int) {
	p := q.pool
	for w, word := range p.cand {
		for rest := word; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			if p.diskFree[w*64+b] < q.req.DiskMB {
				word &^= 1 << uint(b)
				counts[0]++
			}
		}
		p.cand[w] = word
	}
}

func (diskFilter) reason(q *query, _, n int) string {
	return plural(n, "lacks ", "lack ") + strconv.FormatInt(q.req.DiskMB, 10) + " MB free disk"
}
