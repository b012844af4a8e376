package queue

import (
	"math/rand/v2"
	"slices"
	"time"
)

// This file is a small discrete-event model of one cluster, driven by a
// scheduler loop that uses Order, Active, Shadow and MayBackfill the way
// the server's scheduling pass does. It exists to show that a large job
// is not starved by a stream of small ones (starvation_test.go).
//
// The model: machines have memory units; a small instance asks one unit,
// an instance of the large job asks a whole two-unit machine. A machine
// with one free unit is free to a small job but useless to the large one,
// so when small jobs keep arriving, the naive rule (place whatever fits
// whenever capacity frees) fills every freed unit with a small job and no
// machine ever empties. Each instance finishing is its own event followed
// by a scheduling pass, as the server dispatches on every CHILD_TERM.

// simJob is one job of the model.
type simJob struct {
	id        uint64
	queue     string
	instances int
	units     int             // memory units one instance asks
	runtime   []time.Duration // actual run time of each instance
	submit    time.Time
	placed    int         // instances started, in instance order
	started   []time.Time // start of each placed instance
}

// simRun is one instance running on a machine.
type simRun struct {
	job      *simJob
	units    int
	end      time.Time // actual end: start + min(runtime, run limit)
	declared time.Time // DeclaredEnd: start + run limit, or zero
}

// simMachine is one machine of the model.
type simMachine struct {
	units int
	runs  []*simRun
}

func (m *simMachine) free() int {
	f := m.units
	for _, r := range m.runs {
		f -= r.units
	}
	return f
}

// sim is the cluster, its queues and its clock.
type sim struct {
	protect  bool // EASY backfill; false is the naive rule
	limits   map[string]Limits
	machines []*simMachine
	jobs     map[uint64]*simJob
	order    []*simJob // by submission
	now      time.Time
	done     int // instances finished
	// backfilled counts instances placed, by MayBackfill, on a machine the
	// head competes for.
	backfilled int

	// firstHead and firstShadow record when a job first became the head
	// and the shadow computed then (known or not), by job id.
	firstHead   map[uint64]time.Time
	firstShadow map[uint64]time.Time
}

func newSim(protect bool, limits map[string]Limits, machineUnits []int, start time.Time) *sim {
	s := &sim{
		protect: protect, limits: limits, jobs: make(map[uint64]*simJob), now: start,
		firstHead: make(map[uint64]time.Time), firstShadow: make(map[uint64]time.Time),
	}
	for _, u := range machineUnits {
		s.machines = append(s.machines, &simMachine{units: u})
	}
	return s
}

// submit adds a job at the current time.
func (s *sim) submit(queue string, units int, runtime ...time.Duration) *simJob {
	j := &simJob{
		id: uint64(len(s.order) + 1), queue: queue, instances: len(runtime), units: units,
		runtime: runtime, submit: s.now,
	}
	s.jobs[j.id] = j
	s.order = append(s.order, j)
	return j
}

// waiting is the number of instances not yet started, of every job.
func (s *sim) waiting() int {
	n := 0
	for _, j := range s.order {
		n += j.instances - j.placed
	}
	return n
}

// pass is one scheduling pass at s.now, the server's loop in miniature:
// order the waiting instances; admit each under nq_maxactive; the first
// job that finds no room on machines able to hold it is the head, and its
// shadow bounds what later jobs may take of the machines it competes for.
func (s *sim) pass() {
	var items []Item
	for _, j := range s.order {
		for i := j.placed; i < j.instances; i++ {
			items = append(items, Item{
				JobID: j.id, Instance: i, Priority: s.limits[j.queue].Priority,
				SubmitIndex: j.id, Queue: j.queue,
			})
		}
	}
	Order(items)
	running := make(map[string]int)
	for _, m := range s.machines {
		for _, r := range m.runs {
			running[r.job.queue]++
		}
	}
	active := NewActive(s.limits, running)

	var head *simJob
	var shadow time.Time
	var known bool
	unplaceable := make(map[uint64]bool)
	for _, it := range items {
		j := s.jobs[it.JobID]
		if unplaceable[j.id] || !active.Admit(it.Queue) {
			continue
		}
		limit := s.limits[j.queue].RunLimit()
		mayContested := true // may j take a machine the head competes for
		if s.protect && head != nil && head != j {
			mayContested = MayBackfill(s.now, limit, shadow, known)
		}
		m := s.fit(j, func(m *simMachine) bool {
			return mayContested || head == nil || m.units < head.units
		})
		if m == nil {
			unplaceable[j.id] = true
			if s.protect && head == nil && s.couldEverHold(j) {
				head = j
				shadow, known = Shadow(j.instances-j.placed, s.ends(j))
				if _, ok := s.firstHead[j.id]; !ok {
					s.firstHead[j.id] = s.now
					s.firstShadow[j.id] = shadow
				}
			}
			continue
		}
		if head != nil && head != j && m.units >= head.units {
			s.backfilled++
		}
		s.start(j, m, limit)
		active.Take(it.Queue)
	}
}

// fit is the first machine allowed by may with room for one instance of
// j, or nil.
func (s *sim) fit(j *simJob, may func(*simMachine) bool) *simMachine {
	for _, m := range s.machines {
		if m.free() >= j.units && may(m) {
			return m
		}
	}
	return nil
}

// couldEverHold reports whether some machine is big enough for j: j waits
// for capacity, not for a machine that does not exist.
func (s *sim) couldEverHold(j *simJob) bool {
	return slices.ContainsFunc(s.machines, func(m *simMachine) bool { return m.units >= j.units })
}

// ends is, per machine big enough for j, when it will have room for one
// instance of j judged by declared ends: the declared end of the run
// whose finish, in declared order, frees enough units; zero when that
// needs a run without a declared end.
func (s *sim) ends(j *simJob) []time.Time {
	var ends []time.Time
	for _, m := range s.machines {
		if m.units < j.units {
			continue
		}
		runs := slices.Clone(m.runs)
		slices.SortFunc(runs, func(a, b *simRun) int {
			// Undeclared ends last: they never free.
			switch {
			case a.declared.IsZero() && b.declared.IsZero():
				return 0
			case a.declared.IsZero():
				return 1
			case b.declared.IsZero():
				return -1
			}
			return a.declared.Compare(b.declared)
		})
		free, end := m.free(), s.now
		for _, r := range runs {
			if free >= j.units || r.declared.IsZero() {
				break
			}
			free += r.units
			end = r.declared
		}
		if free < j.units {
			end = time.Time{}
		}
		ends = append(ends, end)
	}
	return ends
}

func (s *sim) start(j *simJob, m *simMachine, limit time.Duration) {
	run := j.runtime[j.placed]
	if limit > 0 {
		run = min(run, limit) // killed at its run limit
	}
	m.runs = append(m.runs, &simRun{
		job: j, units: j.units, end: s.now.Add(run), declared: DeclaredEnd(s.now, limit),
	})
	j.placed++
	j.started = append(j.started, s.now)
}

// nextEnd is the machine and run that ends first (ties by machine, then
// start order), or nil.
func (s *sim) nextEnd() (*simMachine, int) {
	var best *simMachine
	bi := -1
	for _, m := range s.machines {
		for i, r := range m.runs {
			if best == nil || r.end.Before(best.runs[bi].end) {
				best, bi = m, i
			}
		}
	}
	return best, bi
}

// stream is the small jobs: one arrives every gap, each with one instance
// of one unit and a run time drawn uniformly from [minRun, maxRun] whole
// seconds with a fixed seed. When quickEvery > 0, every quickEvery-th job
// is a quick one instead, in queue "quick", running 2-10 s.
type stream struct {
	queue          string
	gap            time.Duration
	minRun, maxRun int
	quickEvery     int
	rng            *rand.Rand
	next           time.Time
	n              int
}

// arrive submits the stream's next small job to s.
func (st *stream) arrive(s *sim) {
	st.n++
	if st.quickEvery > 0 && st.n%st.quickEvery == 0 {
		s.submit("quick", 1, time.Duration(2+st.rng.IntN(9))*time.Second)
		return
	}
	s.submit(st.queue, 1, time.Duration(st.minRun+st.rng.IntN(st.maxRun-st.minRun+1))*time.Second)
}

// run advances the model to horizon: finishing instances and arrivals are
// events, each followed by a pass; at arrive the callback may submit
// extra jobs (once, when the clock first reaches it).
func (s *sim) run(st *stream, horizon, arrive time.Time, extra func()) {
	s.pass()
	for {
		m, i := s.nextEnd()
		next := st.next
		if !arrive.IsZero() && arrive.Before(next) {
			next = arrive
		}
		if m != nil && !m.runs[i].end.After(next) {
			next = m.runs[i].end
		}
		if next.After(horizon) {
			return
		}
		s.now = next
		switch {
		case m != nil && m.runs[i].end.Equal(next):
			m.runs = slices.Delete(m.runs, i, i+1)
			s.done++
		case !arrive.IsZero() && arrive.Equal(next):
			extra()
			arrive = time.Time{}
		default:
			st.arrive(s)
			st.next = st.next.Add(st.gap)
		}
		s.pass()
	}
}
