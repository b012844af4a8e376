package fsmscale

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// Params sizes the database Build makes.
type Params struct {
	// Machines is how many machines join (StubJoin); the loaded database
	// declares every one of them.
	Machines int
	// Jobs is how many jobs are submitted. The most recent Unfinished
	// fraction of them is left running or queued; the others have
	// finished (exited, failed, signalled or killed).
	Jobs int
	// Unfinished is that fraction; 0 means DefaultUnfinished.
	Unfinished float64
	// Progress, when set, is called from Build's goroutine every 100,000
	// jobs with the number applied so far.
	Progress func(jobs int)

	// Retention and Keep, when either is positive, expire finished jobs
	// as a leader with --job-retention Retention and
	// --job-retention-count Keep does: after every batch of jobs one
	// JobsExpire at the batch's time (the generator's clock, not the
	// wall's).
	Retention time.Duration
	Keep      int
	// Steady, when positive, keeps the work in flight the same over the
	// whole run instead of leaving the latest jobs unfinished: the
	// Unfinished fraction is drawn among every batch's jobs, each of them
	// runs for Steady batches, then exits. Only the last Steady batches'
	// are still running at the end, and none is queued.
	Steady int
	// Checkpoint, when set, is called from Build's goroutine after every
	// CheckpointEvery jobs' batch is applied (and expired), with what was
	// applied so far; f is quiescent meanwhile, so it may be read,
	// snapshotted or measured. An error stops Build with it.
	// CheckpointEvery must be a positive multiple of 1,000.
	Checkpoint      func(Stats) error
	CheckpointEvery int
}

// DefaultUnfinished is the fraction of jobs left running or queued: two
// thirds of them running, one third queued.
const DefaultUnfinished = 0.03

// Stats says what Build applied.
type Stats struct {
	// Index is the Raft index of the last command applied.
	Index uint64
	// Commands counts the commands applied, by type.
	Commands map[fsm.MessageType]int
	// Jobs and Instances count what was submitted.
	Jobs      int
	Instances int
	// Expired counts the jobs JobsExpire entries removed.
	Expired int
}

// ErrNotEmpty means Build was given an FSM that has applied commands: job
// ids and indexes would not be the ones it plans with.
var ErrNotEmpty = errors.New("fsm is not empty")

// ErrCheckpointEvery means Params.CheckpointEvery is not a positive
// multiple of the jobs placed together (1,000).
var ErrCheckpointEvery = errors.New("not a positive multiple of 1000")

// batchEntries is how many encoded entries travel from the generator to
// the applier at once.
const batchEntries = 1024

// entry is one encoded command and what its result must say.
type entry struct {
	typ  fsm.MessageType
	data []byte
	// job is the id a Submit must create; accepted is how many
	// assignments a Place must accept, all of them.
	job      uint64
	accepted int
	// checkpoint, when positive, is the number of jobs submitted once
	// this entry is applied: Build calls Params.Checkpoint after it.
	checkpoint int
}

// check returns an error when res is not what the generator planned: a
// refused command, another job id, a dropped assignment or a stale event.
func (e *entry) check(res *fsm.Result) error {
	switch {
	case res.Err != nil:
		return fmt.Errorf("%v refused: %w", e.typ, res.Err)
	case e.typ == fsm.SubmitType && res.JobID != e.job:
		return fmt.Errorf("submit created job %d, want %d", res.JobID, e.job)
	case e.typ == fsm.PlaceType && (len(res.Accepted) != e.accepted || res.Dropped != 0):
		return fmt.Errorf("place accepted %d and dropped %d, want all %d", len(res.Accepted), res.Dropped, e.accepted)
	case res.Stale:
		return fmt.Errorf("%v was stale", e.typ)
	}
	return nil
}

// Build applies the commands of a database of p's size to f, which must
// be new, at Raft indexes 1, 2, ... It encodes on one goroutine and
// applies on the caller's, and fails on the first command whose result is
// not the planned one. f must not be used by anyone else meanwhile.
func Build(f *fsm.FSM, p Params) (Stats, error) {
	if idx, _ := f.Watch(); idx != 0 {
		return Stats{}, fmt.Errorf("build scale state: %w (index %d)", ErrNotEmpty, idx)
	}
	if p.Unfinished == 0 {
		p.Unfinished = DefaultUnfinished
	}
	if p.Checkpoint != nil && (p.CheckpointEvery <= 0 || p.CheckpointEvery%jobBatch != 0) {
		return Stats{}, fmt.Errorf("build scale state: checkpoint every %d jobs: %w", p.CheckpointEvery, ErrCheckpointEvery)
	}
	g := newGenerator(p)
	batches := make(chan []entry, 8)
	stop := make(chan struct{})
	var genErr error
	go func() {
		defer close(batches)
		genErr = g.run(stop, batches)
	}()
	st := Stats{Commands: make(map[fsm.MessageType]int)}
	var applyErr error
	for batch := range batches {
		if applyErr != nil {
			continue // drain until the generator sees stop
		}
		for i := range batch {
			e := &batch[i]
			st.Index++
			res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: st.Index, Data: e.data}).(*fsm.Result)
			if err := e.check(res); err != nil {
				applyErr = fmt.Errorf("build scale state: index %d: %w", st.Index, err)
				close(stop)
				break
			}
			st.Commands[e.typ]++
			if e.typ == fsm.JobsExpireType {
				st.Expired += res.Affected
			}
			if e.typ == fsm.SubmitType && p.Progress != nil && e.job%100_000 == 0 {
				p.Progress(int(e.job))
			}
			if e.checkpoint > 0 {
				st.Jobs = e.checkpoint
				if err := p.Checkpoint(st); err != nil {
					applyErr = fmt.Errorf("build scale state: checkpoint at %d jobs: %w", e.checkpoint, err)
					close(stop)
					break
				}
			}
		}
	}
	if applyErr != nil {
		return st, applyErr
	}
	if genErr != nil {
		return st, fmt.Errorf("build scale state: %w", genErr)
	}
	st.Jobs, st.Instances = g.jobs, g.instances
	return st, nil
}
