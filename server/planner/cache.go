package planner

import (
	"maps"
	"slices"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// Cache keeps what a pass builds of the machines between the leader's
// passes: each machine's view and the matcher's Pool indexed over them.
// New builds both for every machine, 18 ms of each pass over 10,000
// machines (BenchmarkPassScaleStuck's pass before the Cache); a Cache
// rebuilds the views of the
// machines whose database record or active work changed since its last
// pass (fsm.View.MachineVersion), whose liveness changed, that hold a
// reservation (which comes into force and ends with time), and those the
// last pass took from, and replaces them in the Pool (matcher.Pool.Replace),
// so that a pass costs a look at each machine's version and liveness and
// the work of what changed. It starts over when the machine set changes
// (a machine joins for the first time) or a restore replaced the state.
//
// A pass from a Cache plans exactly what New's would on the same view,
// liveness and time (TestCacheAgainstNew). A Cache serves one pass at a
// time: the Pass it returns uses its Pool until the next call.
type Cache struct {
	epoch    uint64
	machines []*fsm.Machine
	index    map[string]int
	versions []uint64
	live     []Liveness
	views    []matcher.MachineView
	pool     *matcher.Pool
	// reserved are the machines a reservation named at the last pass.
	reserved []int
	// unmatched holds the jobs whose requirements no machine met at a
	// pass since what they look at last changed (a machine's name, keys,
	// mounts or attributes; a rebuild). Such a job cannot be placed until
	// it does, and Place passes it by: nothing else in the pass depends
	// on a job no machine matches.
	unmatched map[uint64]bool
	// Rebuilt counts the passes that built every view, and Refreshed
	// the views rebuilt one by one, for tests and benchmarks.
	Rebuilt, Refreshed int
}

// NewCache returns an empty Cache: its first pass builds every view.
func NewCache() *Cache { return &Cache{} }

// Pass prepares a pass over v at now, as New does, from the views c
// keeps, brought up to date first: every machine's liveness is compared
// with the one its view was built with.
func (c *Cache) Pass(v fsm.View, live map[string]Liveness, now time.Time) *Pass {
	return c.PassChanged(v, live, nil, true, now)
}

// PassChanged is Pass for a caller that knows which machines' liveness
// may have changed since its last pass (changed; all when any may have):
// only theirs is compared, and the pass costs a look at each machine's
// version and the work of what changed.
func (c *Cache) PassChanged(v fsm.View, live map[string]Liveness, changed []string, all bool, now time.Time) *Pass {
	if c.pool == nil || v.Epoch() != c.epoch || v.MachineCount() != len(c.machines) {
		c.rebuild(v, live, now)
	} else {
		c.refresh(v, live, changed, all, now)
	}
	free := false
	for m := range v.MachinesWithFreeSlot() {
		if freeSlot(v, m) && live[m.Name].Up {
			free = true
			break
		}
	}
	p := newPass(v, now, c.machines, c.pool, free)
	p.cache = c
	return p
}

// unmatchable reports whether no machine met job's requirements at a
// pass since they last changed.
func (c *Cache) unmatchable(job uint64) bool { return c.unmatched[job] }

// noteUnmatched records that no machine meets job's requirements.
func (c *Cache) noteUnmatched(job uint64) {
	if c.unmatched == nil {
		c.unmatched = make(map[uint64]bool)
	}
	c.unmatched[job] = true
}

// requirementsMoved forgets the unmatched jobs: a machine's name, keys,
// mounts or attributes changed, or every view was rebuilt.
func (c *Cache) requirementsMoved() { clear(c.unmatched) }

// rebuild makes every view and the Pool afresh.
func (c *Cache) rebuild(v fsm.View, live map[string]Liveness, now time.Time) {
	c.Rebuilt++
	c.epoch = v.Epoch()
	c.machines = v.Machines()
	n := len(c.machines)
	c.index = make(map[string]int, n)
	c.versions = make([]uint64, n)
	c.live = make([]Liveness, n)
	c.views = make([]matcher.MachineView, n)
	for i, m := range c.machines {
		c.index[m.Name] = i
		c.versions[i] = v.MachineVersion(m)
		c.live[i] = live[m.Name]
		c.views[i] = keptView(v, m, c.live[i], now)
	}
	c.reserved = c.reservedNow(v)
	c.pool = matcher.NewPool(c.views)
	c.requirementsMoved()
}

// refresh brings the kept views and the Pool up to v, live and now,
// comparing the liveness of the machines named in changed (all: of every
// machine).
func (c *Cache) refresh(v fsm.View, live map[string]Liveness, changed []string, all bool, now time.Time) {
	for _, i := range c.pool.Changed() { // the last pass's takes
		c.pool.Replace(i, c.views[i])
	}
	reserved := c.reservedNow(v)
	for _, i := range c.reserved { // a reservation may have ended or been removed
		c.set(v, i, live[c.machines[i].Name], now)
	}
	for _, i := range reserved { // or come into force
		c.set(v, i, live[c.machines[i].Name], now)
	}
	c.reserved = reserved
	if !all {
		for _, name := range changed {
			if i, ok := c.index[name]; ok && live[name] != c.live[i] {
				c.set(v, i, live[name], now)
			}
		}
	}
	for i, m := range c.machines {
		if v.MachineVersion(m) != c.versions[i] || all && live[m.Name] != c.live[i] {
			c.set(v, i, live[m.Name], now)
		}
	}
}

// set rebuilds machine i's view and replaces it in the Pool.
func (c *Cache) set(v fsm.View, i int, l Liveness, now time.Time) {
	c.Refreshed++
	m := c.machines[i]
	c.versions[i] = v.MachineVersion(m)
	c.live[i] = l
	old := c.views[i]
	c.views[i] = keptView(v, m, l, now)
	if !sameRequirements(&old, &c.views[i]) {
		c.requirementsMoved()
	}
	c.pool.Replace(i, c.views[i])
}

// sameRequirements reports whether a and b are alike in all a job's
// requirements look at (matcher.Result.Matching): name, keys, mounts and
// attributes.
func sameRequirements(a, b *matcher.MachineView) bool {
	return a.Name == b.Name && slices.Equal(a.Keys, b.Keys) && slices.Equal(a.Mounts, b.Mounts) && maps.Equal(a.Attrs, b.Attrs)
}

// reservedNow lists the machines some reservation names, in force or
// not (its view depends on the time).
func (c *Cache) reservedNow(v fsm.View) []int {
	var out []int
	for _, r := range v.Reservations() {
		for _, name := range r.Machines {
			if i, ok := c.index[name]; ok {
				out = append(out, i)
			}
		}
	}
	return out
}

// keptView is machineView with its own copies of the maps the database
// changes in place as work starts and ends (JobCounts, UsedGres), which
// a view kept between passes must not share: the Pool indexes where each
// job runs from JobCounts, and must find the old counts to forget them.
func keptView(v fsm.View, m *fsm.Machine, l Liveness, now time.Time) matcher.MachineView {
	view := machineView(v, m, l, now)
	view.JobCounts = maps.Clone(view.JobCounts)
	view.UsedGres = maps.Clone(view.UsedGres)
	return view
}
