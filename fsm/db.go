package fsm

import (
	"cmp"
	"maps"
	"slices"
	"sync/atomic"
)

// db is the whole replicated state. Only Apply and Restore change it. The
// maps are never iterated where order could reach the state or a snapshot
// without sorting first.
type db struct {
	index     uint64 // last applied Raft index
	nextJobID uint64
	machines  map[string]*Machine
	jobs      map[uint64]*Job
	database  Database
	// watchMachines is set while an FSM's MachineObserver watches;
	// touched are the machines the entries applied since it was last told
	// changed (observe.go). Neither is state.
	watchMachines bool
	touched       []*Machine
	// machinesSorted is every machine sorted by name (View.Machines), built on
	// first use after a machine was added; derived, not state. Readers
	// share the FSM's read lock, hence the atomic; writers clear it.
	machinesSorted atomic.Pointer[[]*Machine]
	// declIdx indexes database's declarations by name (database_index.go);
	// derived, rebuilt with it.
	declIdx declIndex
	// databaseIndex is the index of the last LoadDatabase; 0 = never loaded.
	databaseIndex     uint64
	reservations      map[uint64]*Reservation
	nextReservationID uint64
	tokens            map[string]*Token // by ID
	events            eventRing         // derived, never snapshotted
	// owedSends counts the changes that may have left an instance owed a
	// Start or a signal: one placed, killed, suspended, resumed or to be
	// restarted. A hint for the leader's dispatcher, which walks the
	// active instances only when it moved (View.OwedSends); never
	// snapshotted, and no command's outcome depends on it.
	owedSends uint64

	// epoch tells this db apart from every other one in the process
	// (View.Epoch); versions counts the changes View.MachineVersion
	// reports. Neither is state.
	epoch    uint64
	versions uint64

	// Derived indexes, rebuilt from machines and jobs by reindex.
	byIdempotency map[string]uint64
	byName        map[string][]uint64 // ascending job ids
	queued        map[InstanceRef]struct{}
	active        map[InstanceRef]string // placed or running -> machine
	running       map[string]int         // machine -> active instances
	// open holds the machines with fewer active instances than slots,
	// whatever their state, so that asking whether any machine has a
	// slot free (the leader does on every commit) looks at those alone.
	open map[string]struct{}
	// queuedOrder is queued sorted (View.Queued), kept between changes
	// of queued and dropped (nil) by each: the leader reads it on every
	// pass, and most commits (a CHILD event) queue nothing. Readers
	// under the read lock may fill it at once; each fills it alike.
	queuedOrder  atomic.Pointer[[]InstanceRef]
	lent         int                       // instances suspended for a preemptor (Instance.lent)
	usedMemory   map[string]int64          // machine -> memory_mb of active instances
	usage        map[string]*usage         // machine -> CPUs, GPUs, disk, gres of active instances
	usedLicenses map[string]int            // licence -> held by active instances
	perJob       map[string]map[uint64]int // machine -> job -> active instances
	queues       map[string]*queueCounts   // queue -> what it holds
	users        map[QueueUser]*UserCounts // (queue, owner) -> what the owner holds there
	tokenByHash  map[string]string         // token hash -> token ID
	// dependents lists, for each job that held jobs wait for, their ids
	// in ascending order (held jobs only; a listed job that has since been
	// decided or killed is skipped).
	dependents map[uint64][]uint64
	// ended lists the jobs that ended while the entry being applied was
	// applied; flushEnded decides the jobs held for them once it is.
	ended []uint64
	// crons holds the cron jobs whose schedule runs (not ended), for the
	// leader, which asks after every commit which of them are due.
	crons map[uint64]struct{}
	// mails is the pending mail by ID (mail.go); snapshotted since
	// version 9.
	mails map[string]*Mail
	// notes is what the entry being applied noted for mail; flushMail
	// empties it at the end of every entry.
	notes mailNotes
	// share is the fair-share usage (fairshare.go); snapshotted since
	// version 13.
	share fairShare
	// shares is derived from the database's accounts and shares.
	shares shareIndex
	// prime is each queue's prime-time state (primetime.go), for the
	// queues that declare a window and have been switched; snapshotted
	// since version 15.
	prime map[string]PrimeState
	// policy is the site policy script (policy.go), nil when none;
	// snapshotted since version 15.
	policy *Policy
	// snaps are the snapshots being persisted, whose jobs edit copies
	// before they change (snapshot_capture.go); never snapshotted.
	snaps []*capture
	// out gathers the events and ended attempts of the entries applied,
	// for FSM.SetRecorder's recorder; nil when nobody records. Derived,
	// never snapshotted, and nothing in the state depends on it.
	out *outbox
}

// queueCounts is what one queue holds now.
type queueCounts struct {
	Jobs    int // unfinished jobs
	Waiting int // queued instances
	Active  int // placed, running or suspended instances
}

func (d *db) counts(queue string) *queueCounts {
	c, ok := d.queues[queue]
	if !ok {
		c = &queueCounts{}
		d.queues[queue] = c
	}
	return c
}

func newDB() *db {
	d := &db{
		nextJobID:         1,
		nextReservationID: 1,
		machines:          make(map[string]*Machine),
		jobs:              make(map[uint64]*Job),
		reservations:      make(map[uint64]*Reservation),
		tokens:            make(map[string]*Token),
		mails:             make(map[string]*Mail),
		epoch:             epochs.Add(1),
	}
	d.reindex()
	return d
}

// reindex rebuilds the derived indexes from the records.
func (d *db) reindex() {
	// Sized for every job, so that indexing a restored snapshot's million
	// jobs does not grow the maps a few dozen times over.
	d.byIdempotency = make(map[string]uint64, len(d.jobs))
	d.byName = make(map[string][]uint64, len(d.jobs))
	d.queued = make(map[InstanceRef]struct{})
	d.queuedOrder.Store(nil)
	d.active = make(map[InstanceRef]string)
	d.running = make(map[string]int)
	d.open = make(map[string]struct{})
	d.lent = 0
	d.usedMemory = make(map[string]int64)
	d.usage = make(map[string]*usage)
	d.usedLicenses = make(map[string]int)
	d.perJob = make(map[string]map[uint64]int)
	d.queues = make(map[string]*queueCounts)
	d.users = make(map[QueueUser]*UserCounts)
	d.indexAccounts()
	d.dependents = make(map[uint64][]uint64)
	d.crons = make(map[uint64]struct{})
	d.indexTokens()
	d.declIdx = indexDeclarations(&d.database)
	for _, m := range d.machines {
		m.eff = d.decl().effective(&m.MachineFacts)
		d.refreshOpen(m.Name)
	}
	ids := make([]uint64, 0, len(d.jobs))
	for id := range d.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		d.indexJob(d.jobs[id])
	}
}

func (d *db) indexJob(j *Job) {
	j.binaryKeys = slices.Sorted(maps.Keys(j.Spec.Binaries))
	if j.IdempotencyKey != "" {
		d.byIdempotency[j.IdempotencyKey] = j.ID
	}
	d.byName[j.Name] = append(d.byName[j.Name], j.ID)
	j.done = j.allFinished()
	if !j.done {
		d.counts(j.Queue).Jobs++
		d.addUser(j, 1, 0, 0)
	}
	for i := range j.Instances {
		d.setIndexes(j.ID, &j.Instances[i])
	}
	if j.held() {
		d.indexDependent(j)
	}
	if j.Cron != nil && !j.Cron.Ended {
		d.crons[j.ID] = struct{}{}
	}
}

// refreshDone keeps the count of a queue's unfinished jobs true after an
// instance of j changed state at index, and decides the jobs held for j
// when it has just ended.
func (d *db) refreshDone(j *Job, index uint64) {
	done := j.allFinished()
	ended := done && !j.done
	switch {
	case ended:
		d.counts(j.Queue).Jobs--
		d.addUser(j, -1, 0, 0)
	case !done && j.done:
		d.counts(j.Queue).Jobs++
		d.addUser(j, 1, 0, 0)
	}
	j.done = done
	if ended {
		if j.Spec.Mail != "" || len(d.database.Admins) > 0 {
			d.notes.ended = append(d.notes.ended, j.ID)
		}
		d.ended = append(d.ended, j.ID)
	}
}

// flushEnded decides, at index, the jobs held for the jobs that ended
// while the entry at index was applied and are still ended after it. An
// instance whose attempt failed and which the same entry restarts has
// ended only for a moment: that must release or cancel nothing. A job
// cancelled here has ended too, so its own dependents are decided in
// turn, at once (resolveDependents flushes after each decision).
func (d *db) flushEnded(index uint64) {
	pending := d.ended
	d.ended = nil
	for _, id := range pending {
		if j := d.jobs[id]; j != nil && j.done {
			d.resolveDependents(j, index)
		}
	}
}

// setIndexes files an instance under the indexes its state calls for.
// Call it after every state change of an instance, with the old state
// already removed by unsetIndexes.
func (d *db) setIndexes(jobID uint64, in *Instance) {
	ref := InstanceRef{JobID: jobID, Instance: in.Index}
	j := d.jobs[jobID]
	switch {
	case in.State == InstanceQueued:
		d.queued[ref] = struct{}{}
		d.queuedOrder.Store(nil)
		d.counts(j.Queue).Waiting++
		d.addUser(j, 0, 1, 0)
	case in.Active():
		d.counts(j.Queue).Active++
		d.addUser(j, 0, 0, 1)
		d.active[ref] = in.Machine
		if in.lent() {
			d.lent++
			break // its slot and resources are lent to its preemptor
		}
		d.running[in.Machine]++
		d.refreshOpen(in.Machine)
		d.changedForPlanning(in.Machine)
		if d.perJob[in.Machine] == nil {
			d.perJob[in.Machine] = make(map[uint64]int)
		}
		d.perJob[in.Machine][jobID]++
		if j.Spec.MemoryMB > 0 {
			d.usedMemory[in.Machine] += j.Spec.MemoryMB
		}
		d.hold(j, in, 1)
	}
}

// unsetIndexes removes an instance from the indexes of its current state.
func (d *db) unsetIndexes(jobID uint64, in *Instance) {
	ref := InstanceRef{JobID: jobID, Instance: in.Index}
	j := d.jobs[jobID]
	switch {
	case in.State == InstanceQueued:
		delete(d.queued, ref)
		d.queuedOrder.Store(nil)
		d.counts(j.Queue).Waiting--
		d.addUser(j, 0, -1, 0)
	case in.Active():
		d.counts(j.Queue).Active--
		d.addUser(j, 0, 0, -1)
		delete(d.active, ref)
		if in.lent() {
			d.lent--
			break
		}
		decrement(d.running, in.Machine, 1)
		d.refreshOpen(in.Machine)
		d.changedForPlanning(in.Machine)
		if decrement(d.perJob[in.Machine], jobID, 1); len(d.perJob[in.Machine]) == 0 {
			delete(d.perJob, in.Machine)
		}
		if j.Spec.MemoryMB > 0 {
			decrement(d.usedMemory, in.Machine, j.Spec.MemoryMB)
		}
		d.hold(j, in, -1)
	}
}

// refreshOpen files machine under open, or takes it out, after its
// active count or its slots changed.
func (d *db) refreshOpen(machine string) {
	if m, ok := d.machines[machine]; ok && d.running[machine] < m.Slots() {
		d.open[machine] = struct{}{}
	} else {
		delete(d.open, machine)
	}
}

// epochs numbers the dbs made in this process (db.epoch).
var epochs atomic.Uint64

// changedForPlanning notes that what a scheduling pass reads of machine
// changed: its record, or the counts and resources of its active
// instances (View.MachineVersion).
func (d *db) changedForPlanning(machine string) {
	if m, ok := d.machines[machine]; ok {
		d.versions++
		m.version = d.versions
	}
}

// decrement lowers a counter, deleting it at zero so maps hold only live
// entries.
func decrement[K comparable, V int | int64](m map[K]V, k K, by V) {
	if m[k] -= by; m[k] <= 0 {
		delete(m, k)
	}
}

// setState moves an instance to a new state, keeping the indexes true.
func (d *db) setState(jobID uint64, in *Instance, state string, index uint64) {
	wasFinished := in.Finished()
	d.unsetIndexes(jobID, in)
	// Owed a Start, or (started after a kill or restart was asked while
	// it was placed) owed that signal now.
	if state == InstancePlaced || state == InstanceRunning && in.endAsked() {
		d.owedSends++
	}
	in.State = state
	in.ModifyIndex = index
	d.setIndexes(jobID, in)
	if in.Finished() {
		d.noteFinished(jobID, in)
		if !wasFinished {
			d.charge(d.jobs[jobID], in)
		}
	}
	d.refreshDone(d.jobs[jobID], index)
}

func (d *db) instance(jobID uint64, idx int) (*Job, *Instance, error) {
	j, ok := d.jobs[jobID]
	if !ok {
		return nil, nil, ErrNoSuchJob
	}
	if idx < 0 || idx >= len(j.Instances) {
		return j, nil, ErrNoSuchInstance
	}
	return j, &j.Instances[idx], nil
}

func sortedRefs[V any](m map[InstanceRef]V) []InstanceRef {
	refs := make([]InstanceRef, 0, len(m))
	for r := range m {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, compareRefs)
	return refs
}

// machinesByName returns every machine sorted by name, kept between
// calls until a machine is added: the leader reads them several times a
// second, and sorting 10,000 names each time was a fifth of its CPU.
// The slice is shared: callers must not modify it.
func (d *db) machinesByName() []*Machine {
	if p := d.machinesSorted.Load(); p != nil {
		return *p
	}
	ms := sortedMachines(d.machines)
	d.machinesSorted.Store(&ms)
	return ms
}

func sortedMachines(m map[string]*Machine) []*Machine {
	out := make([]*Machine, 0, len(m))
	for _, mc := range m {
		out = append(out, mc)
	}
	slices.SortFunc(out, func(a, b *Machine) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortedJobs(m map[uint64]*Job) []*Job {
	out := make([]*Job, 0, len(m))
	for _, j := range m {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
