package fsmscale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// base is when the site's history starts; span is how long the submitted
// jobs are spread over.
var (
	base = time.Date(2025, time.March, 3, 8, 0, 0, 0, time.UTC)
	span = 30 * 24 * time.Hour
)

// jobBatch is how many jobs are submitted before their instances are
// placed together in one Place, as a busy leader batches them.
const jobBatch = 1000

// errStopped means the applier stopped the generator after a failure.
var errStopped = errors.New("stopped")

// generator plans the commands and keeps a model of the machines' load,
// so that every Place it emits is accepted whole.
type generator struct {
	p           Params
	rng         *rand.Rand
	machines    []machine
	profiles    []*profile
	totalWeight int
	index       uint64 // index of the last entry emitted

	stop    <-chan struct{}
	batches chan<- []entry
	out     []entry

	jobs, instances int
	// inflight holds, in Steady mode, the running jobs by the batch they
	// end in.
	inflight map[int][]*job
}

func newGenerator(p Params) *generator {
	return &generator{p: p, rng: rand.New(rand.NewPCG(1992, 6))}
}

// emit encodes a command and queues it for the applier.
func (g *generator) emit(e entry, body any) error {
	data, err := fsm.Encode(e.typ, body)
	if err != nil {
		return err
	}
	e.data = data
	// The full batch goes before the next entry, not after the last:
	// endBatch marks the entry last emitted.
	if len(g.out) == batchEntries {
		if err := g.flush(); err != nil {
			return err
		}
	}
	g.out = append(g.out, e)
	g.index++
	return nil
}

// flush hands the queued entries to the applier.
func (g *generator) flush() error {
	if len(g.out) == 0 {
		return nil
	}
	select {
	case g.batches <- g.out:
	case <-g.stop:
		return errStopped
	}
	g.out = make([]entry, 0, batchEntries)
	return nil
}

// run emits every command: the database, the machines, then the jobs in
// batches.
func (g *generator) run(stop <-chan struct{}, batches chan<- []entry) error {
	g.stop, g.batches = stop, batches
	g.out = make([]entry, 0, batchEntries)
	ks := make([]class, classes)
	for c := range ks {
		ks[c] = newClass(c)
	}
	load := fsm.LoadDatabase{At: base, Source: "site.db", By: "tclark", Database: database(ks, g.p.Machines)}
	if err := g.emit(entry{typ: fsm.LoadDatabaseType}, load); err != nil {
		return err
	}
	g.machines = make([]machine, g.p.Machines)
	for i := range g.machines {
		facts, m := newMachine(i, ks)
		g.machines[i] = m
		at := base.Add(time.Duration(i) * 10 * time.Millisecond)
		if err := g.emit(entry{typ: fsm.StubJoinType}, fsm.StubJoin{At: at, Machine: facts}); err != nil {
			return err
		}
	}
	g.profiles = profiles(g.machines)
	for _, p := range g.profiles {
		if len(p.candidates) == 0 {
			return fmt.Errorf("no machine runs %s jobs: %d machines are too few", p.program, g.p.Machines)
		}
		g.totalWeight += p.weight
	}
	finished := g.p.Jobs - int(float64(g.p.Jobs)*g.p.Unfinished)
	g.inflight = make(map[int][]*job)
	for first := 0; first < g.p.Jobs; first += jobBatch {
		var js []*job
		for k := first; k < min(first+jobBatch, g.p.Jobs); k++ {
			unfinished := k >= finished
			if g.p.Steady > 0 {
				unfinished = g.rng.Float64() < g.p.Unfinished
			}
			js = append(js, g.newJob(uint64(k+1), unfinished))
		}
		if err := g.batch(js); err != nil {
			return err
		}
		if err := g.endBatch(first/jobBatch, len(js)); err != nil {
			return err
		}
	}
	return g.flush()
}

// endBatch closes batch number n, the jobs up to its last submitted: in
// Steady mode the jobs due end, then a JobsExpire when a retention is
// set, and the mark of a checkpoint on the batch's last entry when one
// is due.
func (g *generator) endBatch(n, size int) error {
	now := g.submitTime(uint64(g.jobs))
	if g.p.Steady > 0 {
		for _, j := range g.inflight[n] {
			if err := g.term(j, 1, now, exited); err != nil {
				return err
			}
		}
		delete(g.inflight, n)
	}
	if g.p.Retention > 0 || g.p.Keep > 0 {
		c := fsm.JobsExpire{At: now, Keep: g.p.Keep}
		if g.p.Retention > 0 {
			c.Before = now.Add(-g.p.Retention)
		}
		if err := g.emit(entry{typ: fsm.JobsExpireType}, c); err != nil {
			return err
		}
	}
	if g.p.Checkpoint != nil && size > 0 && g.jobs%g.p.CheckpointEvery == 0 {
		g.out[len(g.out)-1].checkpoint = g.jobs
	}
	return nil
}

// submitTime is when job id is submitted: the jobs are spread evenly over
// the span.
func (g *generator) submitTime(id uint64) time.Time {
	return base.Add(time.Hour + time.Duration(id)*(span/time.Duration(max(g.p.Jobs, 1))))
}

// batch submits js, places every instance that is to run in one Place,
// registers them, and ends the finished ones; failed restartable
// instances run a second attempt.
func (g *generator) batch(js []*job) error {
	var now time.Time
	for _, j := range js {
		now = g.submitTime(j.id)
		sub := fsm.Submit{At: now, Owner: j.owner, IdempotencyKey: g.idempotencyKey(), Spec: j.spec}
		if err := g.emit(entry{typ: fsm.SubmitType, job: j.id}, sub); err != nil {
			return err
		}
		g.jobs++
		g.instances += j.spec.Min
		if j.fate == killedQueued {
			if err := g.emit(entry{typ: fsm.KillType}, fsm.Kill{At: now.Add(5 * time.Second), JobID: j.id, By: j.owner}); err != nil {
				return err
			}
		}
	}
	placed := slices.DeleteFunc(slices.Clone(js), func(j *job) bool { return !j.placed() })
	if err := g.place(placed, 1, now.Add(time.Second)); err != nil {
		return err
	}
	start := now.Add(2 * time.Second)
	for _, j := range placed {
		if j.fate == running && g.p.Steady > 0 {
			// Registered now, ended Steady batches later.
			n := int(j.id-1)/jobBatch + g.p.Steady
			g.inflight[n] = append(g.inflight[n], j)
		} else if j.fate == running && g.rng.IntN(20) == 0 {
			continue // placed, its CHILD_REGISTER not in yet
		}
		if err := g.register(j, 1, start); err != nil {
			return err
		}
		if j.fate == killedRunning {
			if err := g.emit(entry{typ: fsm.KillType}, fsm.Kill{At: start.Add(time.Minute), JobID: j.id, By: j.owner, Signal: "TERM"}); err != nil {
				return err
			}
		}
	}
	var again []*job
	for _, j := range placed {
		if j.fate == running {
			continue
		}
		if err := g.term(j, 1, start, j.fate); err != nil {
			return err
		}
		if (j.fate == failed || j.fate == signaled) && j.spec.Restartable() {
			again = append(again, j)
		}
	}
	if len(again) == 0 {
		return nil
	}
	// The second attempts, placed once the restart backoff has passed.
	later := start.Add(3 * time.Hour)
	if err := g.place(again, 2, later); err != nil {
		return err
	}
	for _, j := range again {
		if err := g.register(j, 2, later.Add(time.Second)); err != nil {
			return err
		}
		if err := g.term(j, 2, later.Add(time.Second), exited); err != nil {
			return err
		}
	}
	return nil
}

// place assigns attempt of every instance of js in one Place at at.
func (g *generator) place(js []*job, attempt uint64, at time.Time) error {
	var as []fsm.Assignment
	for _, j := range js {
		j.where = make([]int, j.spec.Min)
		for inst := range j.spec.Min {
			i, err := g.machineFor(j)
			if err != nil {
				return err
			}
			j.where[inst] = i
			as = append(as, fsm.Assignment{JobID: j.id, Instance: inst, Attempt: attempt, Machine: g.machines[i].name, Key: j.keyOn(&g.machines[i])})
		}
	}
	if len(as) == 0 {
		return nil
	}
	return g.emit(entry{typ: fsm.PlaceType, accepted: len(as)}, fsm.Place{At: at, PlannedAtIndex: g.index, Assignments: as})
}

// machineFor takes a slot for one instance of j on the next of its
// profile's candidates that has room.
func (g *generator) machineFor(j *job) (int, error) {
	p := j.p
	for range p.candidates {
		i := p.candidates[p.cursor]
		p.cursor = (p.cursor + 1) % len(p.candidates)
		if m := &g.machines[i]; m.fits(j.id, j.spec.MemoryMB, j.spec.PerMachineLimit()) {
			m.take(j.id, j.spec.MemoryMB)
			return i, nil
		}
	}
	return -1, fmt.Errorf("no room for job %d among %d %s machines: too few machines for the running jobs", j.id, len(p.candidates), p.program)
}

// keyOn is the binary key an instance of j runs with on m.
func (j *job) keyOn(m *machine) string {
	for _, k := range j.p.binaries {
		if _, ok := slices.BinarySearch(m.keys, k); ok || k == fsm.AnyKey {
			return k
		}
	}
	return fsm.AnyKey // unreachable: the candidates all have a key
}

// register reports CHILD_REGISTER for every instance of j's attempt.
func (g *generator) register(j *job, attempt uint64, at time.Time) error {
	for inst, i := range j.where {
		c := fsm.ChildRegister{At: at, JobID: j.id, Instance: inst, Attempt: attempt, Machine: g.machines[i].name, PID: 1000 + g.rng.IntN(4_000_000)}
		if err := g.emit(entry{typ: fsm.ChildRegisterType}, c); err != nil {
			return err
		}
	}
	return nil
}

// term reports CHILD_TERM for every instance of j's attempt, ending as f
// says, and frees their slots in the model.
func (g *generator) term(j *job, attempt uint64, start time.Time, f fate) error {
	for inst, i := range j.where {
		run := g.runtime()
		c := fsm.ChildTerm{
			At: start.Add(run), JobID: j.id, Instance: inst, Attempt: attempt, Machine: g.machines[i].name,
			UserMS: run.Milliseconds() * int64(80+g.rng.IntN(20)) / 100, SysMS: int64(g.rng.IntN(5000)),
			MaxRSSKB: int64(10_000 + g.rng.IntN(4_000_000)),
		}
		switch f {
		case failed:
			c.ExitCode = 1 + g.rng.IntN(2)
		case signaled:
			c.ExitCode, c.Signal = -1, "SEGV"
		case killedRunning:
			c.ExitCode, c.Signal = -1, "TERM"
		}
		if err := g.emit(entry{typ: fsm.ChildTermType}, c); err != nil {
			return err
		}
		g.machines[i].free(j.id, j.spec.MemoryMB)
	}
	return nil
}
