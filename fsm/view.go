package fsm

import (
	"iter"
	"slices"
	"time"
)

// View reads the database. It is valid only inside the function given to
// FSM.Read; the records it returns must be neither modified nor retained
// after that function returns (copy what you keep).
type View struct{ d *db }

// Index is the Raft index of the last applied command.
func (v View) Index() uint64 { return v.d.index }

// Machines returns every machine, sorted by name, in a slice of the
// caller's own.
func (v View) Machines() []*Machine { return slices.Clone(v.d.machinesByName()) }

// EachMachine yields every machine, in no particular order, copying and
// sorting nothing: for a reader that looks at each machine once and needs
// no order (the leader's membership pass). Machines, sorted, is rebuilt
// after every machine the database gains, which while 10,000 machines
// join is every pass.
func (v View) EachMachine() iter.Seq[*Machine] {
	return func(yield func(*Machine) bool) {
		for _, m := range v.d.machines {
			if !yield(m) {
				return
			}
		}
	}
}

// MachinesWithFreeSlot yields, in no particular order, the machines with
// fewer placed or running instances than slots, whatever their state:
// an index kept as the counts change, for the leader's question on every
// commit whether any machine could take work (a full pool of 10,000
// yields none and costs nothing).
func (v View) MachinesWithFreeSlot() iter.Seq[*Machine] {
	return func(yield func(*Machine) bool) {
		for name := range v.d.open {
			if !yield(v.d.machines[name]) {
				return
			}
		}
	}
}

// MachineVersion is a number that changes whenever what a scheduling
// pass reads of m changes, reservations aside: its record (facts,
// effective attributes, state, drain, health, sleep) or the counts and
// resources of its active instances (JobCounts, Running, UsedMemoryMB,
// MachineUsage). A leader that keeps each machine's view between passes
// (server/planner.Cache) rebuilds those whose version moved. It is not
// state: it means something only with Epoch, and differs between
// replicas.
func (v View) MachineVersion(m *Machine) uint64 { return m.version }

// MachinesVersion grows whenever any machine's MachineVersion moves (a
// machine was created or its record, or what a pass reads of its
// instances, changed). With Epoch it tells a reader that looks at the
// pool from time to time (server/membership) that no machine changed
// since its last look. Not state, like MachineVersion.
func (v View) MachinesVersion() uint64 { return v.d.versions }

// Epoch tells apart the states this process has held: it changes when a
// restore replaces the whole state (and its *Machine records), never
// otherwise.
func (v View) Epoch() uint64 { return v.d.epoch }

// MachineCount is how many machines the database knows, in any state.
// Machines are never forgotten, so it only grows.
func (v View) MachineCount() int { return len(v.d.machines) }

// Machine returns a machine by name.
func (v View) Machine(name string) (*Machine, bool) {
	m, ok := v.d.machines[name]
	return m, ok
}

// Running is how many instances are placed or running on a machine.
func (v View) Running(machine string) int { return v.d.running[machine] }

// Jobs returns every job, sorted by id.
func (v View) Jobs() []*Job { return sortedJobs(v.d.jobs) }

// Job returns a job by id.
func (v View) Job(id uint64) (*Job, bool) {
	j, ok := v.d.jobs[id]
	return j, ok
}

// JobByName returns the most recent job with that name.
func (v View) JobByName(name string) (*Job, bool) {
	ids := v.d.byName[name]
	if len(ids) == 0 {
		return nil, false
	}
	return v.d.jobs[ids[len(ids)-1]], true
}

// JobsNamed returns the jobs with that name, oldest first.
func (v View) JobsNamed(name string) []*Job {
	ids := v.d.byName[name]
	out := make([]*Job, len(ids))
	for i, id := range ids {
		out[i] = v.d.jobs[id]
	}
	return out
}

// Queued returns the instances waiting for a machine, by job then instance.
// The slice is kept until the waiting set changes and shared with every
// reader: do not change it.
func (v View) Queued() []InstanceRef {
	if refs := v.d.queuedOrder.Load(); refs != nil {
		return *refs
	}
	refs := sortedRefs(v.d.queued)
	v.d.queuedOrder.Store(&refs)
	return refs
}

// QueuedCount is how many instances wait to be placed, without listing
// them: the leader asks it after every commit.
func (v View) QueuedCount() int { return len(v.d.queued) }

// OwedSends changes whenever an instance may have come to be owed a
// Start or a signal (placed, killed, suspended, resumed, to be
// restarted, or a snapshot restored); between two equal readings none
// did. The leader's dispatcher walks the active instances only when it
// changed or a send of its own awaits a retry.
func (v View) OwedSends() uint64 { return v.d.owedSends }

// Active returns the placed and running instances, by job then instance.
func (v View) Active() []InstanceRef { return sortedRefs(v.d.active) }

// EachActive calls fn for every active instance with the machine it holds
// a slot on, in no particular order, until fn returns false. It neither
// sorts nor allocates, for the leader's passes after every commit, which
// need no order; Apply never uses it.
func (v View) EachActive(fn func(ref InstanceRef, machine string) bool) {
	for ref, m := range v.d.active {
		if !fn(ref, m) {
			return
		}
	}
}

// Instance returns one instance and its job.
func (v View) Instance(ref InstanceRef) (*Job, *Instance, bool) {
	j, in, err := v.d.instance(ref.JobID, ref.Instance)
	return j, in, err == nil
}

// Database returns the declared database and the index that loaded it
// (0 when none was ever loaded).
func (v View) Database() (*Database, uint64) { return &v.d.database, v.d.databaseIndex }

// UsedMemoryMB is the memory claimed by the instances active on a machine.
func (v View) UsedMemoryMB(machine string) int64 { return v.d.usedMemory[machine] }

// JobCounts returns, for one machine, how many instances of each job are
// placed or running there. The map is the FSM's own: read it, don't keep it.
func (v View) JobCounts(machine string) map[uint64]int { return v.d.perJob[machine] }

// Reservations returns every reservation, by id.
func (v View) Reservations() []*Reservation { return v.d.sortedReservations() }

// ReservedBy returns who holds a reservation of the machine in force at t.
func (v View) ReservedBy(machine string, t time.Time) (string, bool) {
	return v.d.reservedBy(machine, t)
}

// QueueView is a queue's values in force and what it holds. The
// embedded DeclaredQueue is what applies now: the declaration, with its
// prime-time values while its window is open (PrimeState.Open);
// Declared is the declaration as loaded.
type QueueView struct {
	DeclaredQueue
	Declared              DeclaredQueue
	PrimeState            PrimeState
	Jobs, Waiting, Active int
}

// Queues returns every queue, the default one included, in declaration
// order (the default first when it is not declared).
func (v View) Queues() []QueueView {
	var out []QueueView
	if _, ok := v.d.database.Queue(DefaultQueue); !ok {
		out = append(out, v.queueView(DeclaredQueue{Name: DefaultQueue}))
	}
	for _, q := range v.d.database.Queues {
		out = append(out, v.queueView(q))
	}
	return out
}

// Queue returns one queue, the default one included.
func (v View) Queue(name string) (QueueView, bool) {
	if q, ok := v.d.database.Queue(name); ok {
		return v.queueView(*q), true
	}
	if name != DefaultQueue {
		return QueueView{}, false
	}
	return v.queueView(DeclaredQueue{Name: DefaultQueue}), true
}

func (v View) queueView(q DeclaredQueue) QueueView {
	st := v.d.prime[q.Name]
	qv := QueueView{DeclaredQueue: q.InForce(st.Open), Declared: q, PrimeState: st}
	if c, ok := v.d.queues[q.Name]; ok {
		qv.Jobs, qv.Waiting, qv.Active = c.Jobs, c.Waiting, c.Active
	}
	return qv
}
