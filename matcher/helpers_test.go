package matcher

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// mv is an up, awake, idle machine with 4 slots and the given keys.
func mv(name string, keys ...string) MachineView {
	return MachineView{Name: name, Keys: keys, Up: true, Awake: true, Slots: 4}
}

// with returns m changed by each of fs.
func with(m MachineView, fs ...func(*MachineView)) MachineView {
	for _, f := range fs {
		f(&m)
	}
	return m
}

func down(m *MachineView)   { m.Up = false }
func asleep(m *MachineView) { m.Awake = false }

func asleepFor(reason string) func(*MachineView) {
	return func(m *MachineView) { m.Awake, m.AsleepReason = false, reason }
}
func full(m *MachineView) { m.Running = m.Slots }

func slots(n int) func(*MachineView)      { return func(m *MachineView) { m.Slots = n } }
func load(l float64) func(*MachineView)   { return func(m *MachineView) { m.Load = l } }
func rating(r float64) func(*MachineView) { return func(m *MachineView) { m.Rating = r } }
func imposed(l float64) func(*MachineView) {
	return func(m *MachineView) { m.ImposedLoad = l }
}
func reservedBy(u string) func(*MachineView) { return func(m *MachineView) { m.ReservedBy = u } }
func mounts(ms ...string) func(*MachineView) { return func(m *MachineView) { m.Mounts = ms } }
func memory(total, used int64) func(*MachineView) {
	return func(m *MachineView) { m.MemoryMB, m.UsedMemoryMB = total, used }
}
func attrs(kv map[string]float64) func(*MachineView) {
	return func(m *MachineView) { m.Attrs = kv }
}
func jobs(kv map[uint64]int) func(*MachineView) {
	return func(m *MachineView) { m.JobCounts = kv }
}

// cloneViews deep-copies machines so a test can check nothing changed them.
func cloneViews(ms []MachineView) []MachineView {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Keys = slices.Clone(out[i].Keys)
		out[i].Mounts = slices.Clone(out[i].Mounts)
		out[i].Attrs = maps.Clone(out[i].Attrs)
		out[i].JobCounts = maps.Clone(out[i].JobCounts)
		out[i].GPUs = slices.Clone(out[i].GPUs)
		out[i].Gres = maps.Clone(out[i].Gres)
		out[i].UsedGres = maps.Clone(out[i].UsedGres)
	}
	return out
}

// match runs req through Matcher.Match, checks that it left machines alone
// and agrees with the reference matcher, and returns the answer.
func match(t *testing.T, req Request, machines []MachineView) Result {
	t.Helper()
	before := cloneViews(machines)
	got := New().Match(req, machines)
	// Compared as text so that a NaN Load equals itself.
	if fmt.Sprintf("%+v", machines) != fmt.Sprintf("%+v", before) {
		t.Fatalf("Match changed its input: got %+v, want %+v", machines, before)
	}
	checkReference(t, req, machines, got)
	return got
}

// name returns the chosen machine's name, or "" when none was chosen.
func name(r Result, machines []MachineView) string {
	if r.Machine < 0 {
		return ""
	}
	return machines[r.Machine].Name
}

// refCount is one (filter, count) pair of the reference matcher.
type refCount struct {
	Filter string
	Count  int
}

// reference is the matcher written as plainly as possible: every machine
// through every filter in order, no index. It returns the chosen machine,
// the rejection counts in order, and how many machines matched.
func reference(req Request, ms []MachineView) (int, []refCount, int) {
	type cause struct {
		stage, cause int
	}
	names := []string{FilterBinary, FilterKeys, FilterAttrs, FilterMounts, FilterMachines,
		FilterReservation, FilterUp, FilterAwake, FilterSlot, FilterPerMachine,
		FilterGPUs, FilterCPUs, FilterMemory, FilterGres, FilterDisk}
	counts := map[cause]int{}
	var sleepReasons []string
	for _, m := range ms {
		if !m.Awake && !slices.Contains(sleepReasons, m.AsleepReason) {
			sleepReasons = append(sleepReasons, m.AsleepReason)
		}
	}
	slices.Sort(sleepReasons)
	reject := func(m *MachineView) (cause, bool) {
		if !slices.Contains(req.BinaryKeys, Wildcard) &&
			!slices.ContainsFunc(req.BinaryKeys, func(k string) bool { return slices.Contains(m.Keys, k) }) {
			return cause{0, 0}, true
		}
		for j, k := range req.Keys {
			if !slices.Contains(m.Keys, k) {
				return cause{1, j}, true
			}
		}
		for j, r := range req.Requirements {
			v, ok := m.Attrs[r.Attr]
			if !ok {
				return cause{2, 2*j + 1}, true
			}
			if !compare(v, r.Op, r.Value) {
				return cause{2, 2 * j}, true
			}
		}
		for j, k := range req.Mounts {
			if !slices.Contains(m.Mounts, k) {
				return cause{3, j}, true
			}
		}
		if len(req.Machines) > 0 && !slices.Contains(req.Machines, m.Name) {
			return cause{4, 0}, true
		}
		switch {
		case m.ReservedBy != "" && m.ReservedBy != req.Owner:
			return cause{5, 0}, true
		case !m.Up:
			return cause{6, 0}, true
		case !m.Awake:
			return cause{7, slices.Index(sleepReasons, m.AsleepReason)}, true
		case max(m.Running, m.UsedCPUs) >= m.Slots:
			return cause{8, 0}, true
		case req.MaxPerMachine > 0 && m.JobCounts[req.JobID] >= req.MaxPerMachine:
			return cause{9, 0}, true
		}
		gpus := 0
		for _, g := range m.GPUs {
			if !g.Used && (req.GPUType == "" || g.Type == req.GPUType) {
				gpus++
			}
		}
		if req.GPUs > 0 && gpus < req.GPUs {
			return cause{10, 0}, true
		}
		if req.CPUs > 1 && m.Slots-max(m.Running, m.UsedCPUs) < req.CPUs {
			return cause{11, 0}, true
		}
		free := int64(0)
		if m.MemoryMB > 0 {
			free = m.MemoryMB - m.UsedMemoryMB
		}
		if req.MemoryMB > 0 && free < req.MemoryMB {
			return cause{12, 0}, true
		}
		for j, g := range req.Gres {
			if m.Gres[g.Name]-m.UsedGres[g.Name] < g.Count {
				return cause{13, j}, true
			}
		}
		disk := int64(0)
		if m.DiskMB > 0 {
			disk = m.DiskMB - m.UsedDiskMB
		}
		if req.DiskMB > 0 && disk < req.DiskMB {
			return cause{14, 0}, true
		}
		return cause{}, false
	}
	best, bestCost, matching := -1, 0.0, 0
	seed := tieSeed(req)
	for i := range ms {
		m := &ms[i]
		if c, rejected := reject(m); rejected {
			counts[c]++
			if c.stage >= 5 {
				matching++
			}
			continue
		}
		matching++
		cost := 0.0
		cost += effectiveLoad(m)
		if n := m.JobCounts[req.JobID]; n > 0 {
			cost += 1.0 * float64(n) / normRating(m.Rating)
		}
		if req.Prefer != "" && m.Name != req.Prefer {
			cost += 1.0
		}
		better := best < 0 || cost < bestCost
		if !better && cost == bestCost {
			h, bh := tieHash(seed, nameHash(m.Name)), tieHash(seed, nameHash(ms[best].Name))
			better = h < bh || h == bh && m.Name < ms[best].Name
		}
		if better {
			best, bestCost = i, cost
		}
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b cause) int {
		if a.stage != b.stage {
			return a.stage - b.stage
		}
		return a.cause - b.cause
	})
	var out []refCount
	for _, k := range keys {
		out = append(out, refCount{names[k.stage], counts[k]})
	}
	return best, out, matching
}

// checkReference fails t unless got agrees with the reference matcher.
func checkReference(t *testing.T, req Request, ms []MachineView, got Result) {
	t.Helper()
	best, counts, matching := reference(req, ms)
	var gotCounts []refCount
	for _, r := range got.Rejections {
		gotCounts = append(gotCounts, refCount{r.Filter, r.Count})
	}
	if got.Machine != best || got.Matching != matching || !reflect.DeepEqual(gotCounts, counts) {
		t.Fatalf("Match(%+v) = machine %d, matching %d, counts %v; want %d, %d, %v (reference)",
			req, got.Machine, got.Matching, gotCounts, best, matching, counts)
	}
}
