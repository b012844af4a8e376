package fsmscale_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// TestBuild builds a small database and checks it holds what the
// parameters ask: every machine up, every job, a mix of finished, running
// and queued instances, and a loaded database declaring the machines.
func TestBuild(t *testing.T) {
	f := fsm.New()
	st, err := fsmscale.Build(f, fsmscale.Params{Machines: 200, Jobs: 5000})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if st.Jobs != 5000 || st.Commands[fsm.StubJoinType] != 200 || st.Commands[fsm.SubmitType] != 5000 {
		t.Errorf("got %d jobs, %d joins, %d submits, want 5000, 200, 5000", st.Jobs, st.Commands[fsm.StubJoinType], st.Commands[fsm.SubmitType])
	}
	states := map[string]int{}
	var machines, declared, instances, history int
	f.Read(func(v fsm.View) {
		if v.Index() != st.Index {
			t.Errorf("got index %d, want %d", v.Index(), st.Index)
		}
		db, _ := v.Database()
		declared = len(db.Machines)
		for _, m := range v.Machines() {
			if m.Accepts() {
				machines++
			}
		}
		for _, j := range v.Jobs() {
			for _, in := range j.Instances {
				states[in.State]++
				instances++
				history += len(in.History)
			}
		}
	})
	if machines != 200 || declared != 200 {
		t.Errorf("got %d machines up and %d declared, want 200 and 200", machines, declared)
	}
	if instances != st.Instances {
		t.Errorf("got %d instances, want %d", instances, st.Instances)
	}
	for _, s := range []string{fsm.InstanceExited, fsm.InstanceFailed, fsm.InstanceSignaled, fsm.InstanceKilled,
		fsm.InstanceRunning, fsm.InstancePlaced, fsm.InstanceQueued} {
		if states[s] == 0 {
			t.Errorf("no instance is %s (states %v)", s, states)
		}
	}
	if finished := states[fsm.InstanceExited] + states[fsm.InstanceFailed] + states[fsm.InstanceSignaled] + states[fsm.InstanceKilled]; finished < instances*9/10 {
		t.Errorf("got %d of %d instances finished, want most", finished, instances)
	}
	if history == 0 {
		t.Errorf("no instance was restarted")
	}
}

// TestBuildDeterministic: the same parameters give the same state.
func TestBuildDeterministic(t *testing.T) {
	snap := func() []byte {
		f := fsm.New()
		if _, err := fsmscale.Build(f, fsmscale.Params{Machines: 100, Jobs: 1500}); err != nil {
			t.Fatalf("build: %v", err)
		}
		return snapshot(t, f)
	}
	if a, b := snap(), snap(); string(a) != string(b) {
		t.Errorf("two builds differ (%d and %d snapshot bytes)", len(a), len(b))
	}
}

// TestBuildRefuses a used FSM and a pool too small for the running jobs.
func TestBuildRefuses(t *testing.T) {
	f := fsm.New()
	if _, err := fsmscale.Build(f, fsmscale.Params{Machines: 40, Jobs: 10}); err != nil {
		t.Fatalf("build: %v", err)
	}
	if _, err := fsmscale.Build(f, fsmscale.Params{Machines: 40, Jobs: 10}); !errors.Is(err, fsmscale.ErrNotEmpty) {
		t.Errorf("second build on the same FSM: got %v, want %v", err, fsmscale.ErrNotEmpty)
	}
	if _, err := fsmscale.Build(fsm.New(), fsmscale.Params{Machines: 20, Jobs: 20_000, Unfinished: 0.5}); err == nil {
		t.Errorf("10,000 jobs running on 20 machines: got nil error, want one")
	}
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

// snapshot persists f's snapshot into memory.
func snapshot(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("persist: %v", err)
	}
	return sink.Bytes()
}

// TestBuildSteadyRetention: with Steady and Keep, every checkpoint holds
// at most Keep finished jobs and the jobs in flight, however many were
// submitted; the JobsExpire entries removed all the others, and the
// removed ones are gone for good.
func TestBuildSteadyRetention(t *testing.T) {
	const (
		jobs   = 20_000
		keep   = 1_000
		steady = 4
	)
	f := fsm.New()
	var points []int
	p := fsmscale.Params{Machines: 200, Jobs: jobs, Keep: keep, Steady: steady, CheckpointEvery: 5_000}
	p.Checkpoint = func(st fsmscale.Stats) error {
		points = append(points, st.Jobs)
		finished, running := 0, 0
		f.Read(func(v fsm.View) {
			for _, j := range v.Jobs() {
				switch j.State() {
				case fsm.JobRunning:
					running++
				case fsm.JobQueued:
					t.Errorf("at %d jobs: job %d is queued, want none in Steady mode", st.Jobs, j.ID)
				default:
					finished++
				}
			}
			if !v.JobExpired(1) {
				t.Errorf("at %d jobs: job 1 not expired", st.Jobs)
			}
		})
		if finished != keep {
			t.Errorf("at %d jobs: %d finished jobs kept, want %d", st.Jobs, finished, keep)
		}
		// About 3% of each of the last Steady batches of 1,000.
		if running == 0 || running > steady*1000/10 {
			t.Errorf("at %d jobs: %d running, want a few per batch in flight", st.Jobs, running)
		}
		if got := st.Jobs - st.Expired; got != finished+running {
			t.Errorf("at %d jobs: %d submitted less %d expired = %d, want the %d kept", st.Jobs, st.Jobs, st.Expired, got, finished+running)
		}
		return nil
	}
	st, err := fsmscale.Build(f, p)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if want := []int{5_000, 10_000, 15_000, 20_000}; !slices.Equal(points, want) {
		t.Errorf("checkpoints at %v, want %v", points, want)
	}
	if st.Commands[fsm.JobsExpireType] != jobs/1000 {
		t.Errorf("got %d JobsExpire entries, want one per batch, %d", st.Commands[fsm.JobsExpireType], jobs/1000)
	}
}

// TestBuildCheckpointEvery refuses a checkpoint between two batches.
func TestBuildCheckpointEvery(t *testing.T) {
	p := fsmscale.Params{Machines: 40, Jobs: 10, CheckpointEvery: 1500, Checkpoint: func(fsmscale.Stats) error { return nil }}
	if _, err := fsmscale.Build(fsm.New(), p); !errors.Is(err, fsmscale.ErrCheckpointEvery) {
		t.Errorf("checkpoint every 1500 jobs: got %v, want %v", err, fsmscale.ErrCheckpointEvery)
	}
}
