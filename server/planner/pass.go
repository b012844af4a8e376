package planner

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// KillGrace is how long a stub waits after the first signal (netkill,
// netmgr restart, a queue's run limit) before it sends SIGKILL to the
// job's process group. The dispatcher sends it with every Start and kill;
// the planner counts it into the end of work under a run limit.
const KillGrace = 10 * time.Second

// Liveness is what the planner knows of a machine from outside the
// database: whether its stub is up (alive in gossip and not suspected by
// the leader), and the load it last reported. The zero value is a machine
// whose stub is not up.
type Liveness struct {
	Up   bool
	Load float64
	// IdleMinutes is how long the machine's owner has left it idle, when
	// HasIdle: the matcher sees it as the attribute idle (IdleAttr).
	IdleMinutes float64
	HasIdle     bool
}

// IdleAttr is the attribute a job's requirement idle>=MINUTES compares:
// the minutes since the machine's owner last used it. A machine whose
// stub does not watch its owner lacks it.
const IdleAttr = "idle"

// Pass is one scheduling pass over a consistent view: the queued
// instances in queue order, admitted under each queue's nq_maxactive,
// matched one by one against a pool whose counts grow as it assigns, with
// EASY backfill around the head job. A Pass is used by one goroutine,
// inside the fsm.Read that gave its view, and only once.
type Pass struct {
	v        fsm.View
	now      time.Time
	machines []*fsm.Machine
	pool     *matcher.Pool
	matcher  *matcher.Matcher
	active   *queue.Active
	limits   map[string]queue.Limits
	head     *head
	owners   *owners // for dedicated queues; nil when there are none
	// users notes the (queue, owner) pairs whose running count Active
	// has been given, for nq_maxuser_active (admit).
	users map[queue.QueueUser]bool
	// share ranks the owners of waiting work in fair-share order for
	// this pass (fairshare.go); nil while fair share is off.
	share *shares
	// site is the site policy's priority (site.go), nil when none: it
	// replaces share when its calls succeed.
	site *site
	// siteOrdered says this pass's order is the site policy's.
	siteOrdered bool
	// explain asks Run for the fair-share reason of instances left
	// waiting (netstatus --why; Explain).
	explain  bool
	licenses licenses
	// preempts is set when some queue preempts (preempt=) and holds
	// waiting work; modes is each queue's preempt mode. want is the
	// pass's preemptor, stops and lent its victims still stopping and
	// suspended (preempt.go).
	preempts bool
	modes    map[string]string
	want     *preemptor
	stops    map[uint64]int
	lent     map[uint64]int
	// free reports that some machine is up, awake and has a free slot.
	// Without one no instance can be placed, and the scheduler, which runs
	// after every commit, skips the pass (a full pool with a long queue
	// would otherwise match every queued job again on every commit).
	free bool
	// limit is the most instances Place assigns (Limit; 0: no bound),
	// and stop is set once it has: Run then visits no further job.
	limit int
	stop  bool
	// quiet says that visit ignores instances left waiting (Place's,
	// without preemption): Run then skips a job's instances after its
	// first that finds no machine.
	quiet bool
	// cache is the Cache the pass came from, nil for New's: it remembers
	// the jobs no machine matches (Cache.unmatchable).
	cache *Cache
	// failures remembers the requests that found no machine on the pool
	// as it is: a pass of many like jobs waiting for capacity matches
	// one (matcher.Failures).
	failures matcher.Failures
}

// MaxPlace is how many instances the leader's pass places at most. A
// pass runs inside the database's read lock, which every commit waits
// for: filling 10,000 empty machines of 4 slots in one pass would hold it
// about 3.5 s (BenchmarkPassScaleFill), and make one Raft entry of
// 40,000 assignments. Passes of 2,000 hold it a tenth of that each, the
// dispatcher starts the first while the next is planned, and since the
// leader plans again after each commit, a backlog is placed as fast.
const MaxPlace = 2000

// New prepares a pass over v at now, with each machine's liveness from
// live (a machine missing from it is not up). It builds a view of every
// machine, so a caller that can tell nothing will come of the pass (no
// instance queued) skips it; the leader, which passes after every
// commit, keeps the views between passes in a Cache instead.
func New(v fsm.View, live map[string]Liveness, now time.Time) *Pass {
	machines := v.Machines()
	views := make([]matcher.MachineView, len(machines))
	free := false
	for i, m := range machines {
		l := live[m.Name]
		views[i] = machineView(v, m, l, now)
		free = free || (l.Up && freeSlot(v, m))
	}
	return newPass(v, now, machines, matcher.NewPool(views), free)
}

// newPass is a pass over v at now on pool, the views of machines (in
// v.Machines' order); free says whether one of them is up with a slot
// free.
func newPass(v fsm.View, now time.Time, machines []*fsm.Machine, pool *matcher.Pool, free bool) *Pass {
	limits := make(map[string]queue.Limits)
	running := make(map[string]int)
	modes := make(map[string]string)
	for _, q := range v.Queues() {
		limits[q.Name] = q.Limits()
		running[q.Name] = q.Active
		if q.Preempt != "" {
			modes[q.Name] = q.Preempt
		}
	}
	return &Pass{
		v: v, now: now, machines: machines, free: free,
		pool: pool, matcher: matcher.New(),
		active: queue.NewActive(limits, running), limits: limits,
		owners:   newOwners(v, machines, limits),
		users:    map[queue.QueueUser]bool{},
		licenses: newLicenses(v),
		modes:    modes, preempts: len(modes) > 0 && preempting(v),
	}
}

// freeSlot reports whether machine m takes new work and has a slot free
// in the database: with its stub up, an instance may be placed there.
// (machineView's Up, Awake, Running and Slots, said once for New and
// MayPlace.)
func freeSlot(v fsm.View, m *fsm.Machine) bool {
	return m.Accepts() && v.Running(m.Name) < m.Slots()
}

// MayPlace reports whether a pass over v could place or preempt anything:
// some machine whose stub is up (up says, asked only of machines with a
// free slot) has a free slot, or a preempting queue has waiting work.
// When it is false, New's Place is empty and its Preemption none, so the
// leader, which schedules after every commit, skips building the pass: a
// full pool of 10,000 machines with 100,000 instances waiting costs it a
// look at each machine's counts, not a view of each (BenchmarkPassScaleFull).
func MayPlace(v fsm.View, up func(machine string) bool) bool {
	if preempting(v) {
		return true
	}
	for m := range v.MachinesWithFreeSlot() {
		if freeSlot(v, m) && up(m.Name) {
			return true
		}
	}
	return false
}

// admit reports whether the queue's nq_maxactive and the owner's
// nq_maxuser_active let another instance of j start, giving Active the
// owner's running count the first time it is asked.
func (p *Pass) admit(j *fsm.Job) bool {
	if p.limits[j.Queue].MaxUserActive > 0 {
		k := queue.QueueUser{Queue: j.Queue, User: j.Owner}
		if !p.users[k] {
			p.users[k] = true
			p.active.SetUserRunning(j.Queue, j.Owner, p.v.QueueUserCounts(j.Queue, j.Owner).Active)
		}
	}
	return p.active.AdmitUser(j.Queue, j.Owner)
}

// Limit bounds what Place assigns to n instances (n <= 0: no bound). It
// stops between two instances, never within a gang, which is placed
// whole even past n; what is left waits for the next pass, in the same
// order. A pass that stopped early names no preemptor (the next does).
func (p *Pass) Limit(n int) *Pass {
	p.limit = n
	return p
}

// Place runs the pass and returns what it places as one Place, planned at
// the view's index; the caller stamps At before it proposes it. The Place
// has no assignments when nothing can be placed: no machine has a free
// slot, or nothing queued fits.
func (p *Pass) Place() fsm.Place {
	var plan fsm.Place
	if !p.free && !p.preempts {
		return plan // every machine is full, down or draining: nothing can start
	}
	// Only placements matter here, and a preemptor's waiting instances
	// when some queue preempts.
	p.quiet = !p.preempts
	p.Run(func(it queue.Item, in *fsm.Instance, res matcher.Result, held *Held) {
		if res.Machine < 0 {
			if p.preempts && (held == nil && waitsForCapacity(res) || held != nil && held.capacity) {
				j, _ := p.v.Job(it.JobID)
				p.notePreemptor(j, in)
			}
			return
		}
		plan.Assignments = append(plan.Assignments, p.assignment(it.JobID, in.Index, in.Attempt, res))
		p.stop = p.limit > 0 && len(plan.Assignments) >= p.limit
	})
	plan.PlannedAtIndex = p.v.Index()
	return plan
}

// assignment is the Assignment of an attempt to the machine res chose.
func (p *Pass) assignment(job uint64, instance int, attempt uint64, res matcher.Result) fsm.Assignment {
	return fsm.Assignment{
		JobID: job, Instance: instance, Attempt: attempt,
		Machine: p.machines[res.Machine].Name, Key: res.Key,
	}
}

// Held is an instance the pass kept from a machine for a reason of its
// own: its queue's nq_maxactive, or the head job's claim. Reason is the
// sentence `netstatus --why` prints.
type Held struct {
	Reason string
	// capacity is set when the instance waits for machine slots alone
	// (a gang's), so that a preempting queue's job may preempt for it.
	capacity bool
}

// waiting is the result the pass reports for a queued instance it did
// not ask the matcher about: held back by restart backoff or by a Held
// reason.
var waiting = matcher.Result{Machine: -1}

// Run calls visit for every queued instance in queue order with the
// matcher's answer (res.Machine >= 0 when placed), or with a Held reason;
// a placed instance is taken from the pool before the next is matched.
// visit must not keep in or res beyond the call's fsm.Read.
func (p *Pass) Run(visit func(it queue.Item, in *fsm.Instance, res matcher.Result, held *Held)) {
	batches := p.order()
	for b := 0; b < len(batches) && !p.stop; b++ {
		j, _ := p.v.Job(batches[b].item.JobID)
		if j.Spec.Gang {
			p.gang(j, batches[b].items(), visit) // all its instances or none
			continue
		}
		if p.quiet && p.cache != nil && p.cache.unmatchable(j.ID) {
			continue // no machine could run it at the last pass, and none has changed how it matches
		}
		p.runJob(j, batches, b, visit)
	}
}

// runJob matches the instances of batches[b], job j's, one by one. Within
// one pass capacity only shrinks, so once an instance finds no machine
// its later instances find none either: they get the same answer without
// a match, and a quiet pass (Place's, which reports placements alone)
// does not visit them at all.
func (p *Pass) runJob(j *fsm.Job, batches []batch, b int, visit func(queue.Item, *fsm.Instance, matcher.Result, *Held)) {
	bt := &batches[b]
	var again func(it queue.Item, in *fsm.Instance)
	for k := 0; k < len(bt.refs) && !p.stop; k++ {
		it := bt.at(k)
		_, in, _ := p.v.Instance(bt.refs[k])
		if in.NotBefore.After(p.now) {
			visit(it, in, waiting, nil)
			continue
		}
		if again != nil {
			if p.quiet {
				return
			}
			again(it, in)
			continue
		}
		if !p.admit(j) {
			h := &Held{Reason: p.active.ReasonUser(j.Queue, j.Owner)}
			again = func(it queue.Item, in *fsm.Instance) { visit(it, in, waiting, h) }
			visit(it, in, waiting, h)
			continue
		}
		if h := p.licenses.held(j, 1); h != nil {
			again = func(it queue.Item, in *fsm.Instance) { visit(it, in, waiting, h) }
			visit(it, in, waiting, h)
			continue
		}
		req, ok := p.restrict(j, matchRequest(j, in))
		if !ok {
			h := &Held{Reason: p.dedicatedReason(j)}
			again = func(it queue.Item, in *fsm.Instance) { visit(it, in, waiting, h) }
			visit(it, in, waiting, h)
			continue
		}
		res := p.matcher.MatchPoolRemembering(req, p.pool, &p.failures) // jobs alike fail alike
		if res.Machine >= 0 && p.head != nil && p.head.job.ID != j.ID && p.head.competing[res.Machine] && !p.mayBackfill(j) {
			res = p.elsewhere(req)
			if res.Machine < 0 {
				h := &Held{Reason: p.behindHead()}
				again = func(it queue.Item, in *fsm.Instance) { visit(it, in, waiting, h) }
				visit(it, in, waiting, h)
				continue
			}
		}
		if res.Machine < 0 {
			if res.Matching == 0 && p.cache != nil && p.owners == nil {
				p.cache.noteUnmatched(j.ID) // req is the job's own: restrict narrowed nothing
			}
			h := p.stoppingHeld(j) // or fair share's reason, when asked for and it is one
			if h == nil && p.explain && waitsForCapacity(res) {
				h = p.behindShares(batches, b)
			}
			again = func(it queue.Item, in *fsm.Instance) { visit(it, in, res, h) }
			if p.head == nil && waitsForCapacity(res) && p.mayLead(j.Queue) {
				p.head = p.newHead(j, req, p.waitingFrom(j, it.Instance))
			}
			visit(it, in, res, h)
			continue
		}
		p.pool.Take(res.Machine, req)
		p.owners.take(res.Machine, j, p.limits, 1)
		p.active.TakeUser(j.Queue, j.Owner)
		p.licenses.take(j, 1)
		visit(it, in, res, nil)
	}
}
