package fsm_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// checkpointJob returns an applier with m1 and m2 up and a job keeping
// state/ as its checkpoint on exit 85, with no restart policy, running
// attempt 1 on m1.
func checkpointJob(t *testing.T) (*applier, uint64) {
	t.Helper()
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.join("m2", "x86_64", 2)
	job := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: withCheckpoint(spec("counter", 1))}).JobID
	a.run(job, 0, 1, "m1", at(3))
	return a, job
}

// kept is attempt's CheckpointKept of instance 0 on machine, its blob
// named by fill.
func kept(job, attempt uint64, machine, fill string, size int64) fsm.CheckpointKept {
	return fsm.CheckpointKept{At: at(10 + int(attempt)), JobID: job, Instance: 0, Attempt: attempt, Machine: machine,
		Blob: strings.Repeat(fill, 32), Size: size, Files: []string{"state/counter"}}
}

func TestCheckpointRestart(t *testing.T) {
	a, job := checkpointJob(t)
	a.mustOK(fsm.CheckpointKeptType, kept(job, 1, "m1", "aa", 100))
	in := a.instance(job, 0)
	if in.Checkpoint == nil || in.Checkpoint.Attempt != 1 || in.Checkpoint.Size != 100 || in.Checkpoint.Blob != strings.Repeat("aa", 32) {
		t.Fatalf("after CheckpointKept: got Checkpoint %+v, want attempt 1's, 100 bytes", in.Checkpoint)
	}
	// The checkpoint exit queues attempt 2 at once, uncounted, though
	// the job has no restart policy.
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(20), JobID: job, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 85})
	in = a.instance(job, 0)
	if in.Attempt != 2 || in.State != fsm.InstanceQueued || in.Restarts != 0 || !in.NotBefore.IsZero() {
		t.Fatalf("after the checkpoint exit: got attempt %d %s, %d restarts, not before %v; want attempt 2 queued at once, none counted",
			in.Attempt, in.State, in.Restarts, in.NotBefore)
	}
	if got := in.History[0].State; got != fsm.InstanceExited {
		t.Errorf("attempt 1 ended %s, want %s", got, fsm.InstanceExited)
	}
	if in.Checkpoint == nil || in.Checkpoint.Attempt != 1 {
		t.Fatalf("attempt 2 has checkpoint %+v, want attempt 1's", in.Checkpoint)
	}
	// Attempt 2 keeps a newer one: the older blob is referred to no more.
	a.run(job, 0, 2, "m2", at(30))
	a.mustOK(fsm.CheckpointKeptType, kept(job, 2, "m2", "bb", 200))
	var blobs map[string]bool
	var user map[string]int64
	a.f.Read(func(v fsm.View) { blobs, user = v.Blobs(), v.UserBlobs("alice") })
	if want := map[string]bool{strings.Repeat("bb", 32): true}; !maps.Equal(blobs, want) {
		t.Errorf("Blobs() = %v, want only attempt 2's checkpoint", blobs)
	}
	if want := map[string]int64{strings.Repeat("bb", 32): 200}; !maps.Equal(user, want) {
		t.Errorf("UserBlobs(alice) = %v, want %v", user, want)
	}
	// An exit with the code but a signal, or another code, is no
	// checkpoint exit: without a restart policy the instance ends.
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(40), JobID: job, Instance: 0, Attempt: 2, Machine: "m2", ExitCode: 3})
	if in = a.instance(job, 0); in.State != fsm.InstanceFailed || in.Attempt != 2 {
		t.Errorf("after exit 3: got attempt %d %s, want attempt 2 failed", in.Attempt, in.State)
	}
}

func TestCheckpointExitWithoutCheckpoint(t *testing.T) {
	a, job := checkpointJob(t)
	// Exit 85 with nothing kept (the stub found no file): an ordinary
	// failure, so a job that never keeps one does not loop.
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(20), JobID: job, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 85})
	if in := a.instance(job, 0); in.State != fsm.InstanceFailed || in.Attempt != 1 {
		t.Errorf("got attempt %d %s, want attempt 1 failed", in.Attempt, in.State)
	}
}

func TestCheckpointKeptRefused(t *testing.T) {
	a, job := checkpointJob(t)
	plain := a.submit("plain", 1)
	a.run(plain, 0, 1, "m2", at(3))
	tests := []struct {
		name      string
		c         fsm.CheckpointKept
		wantErr   error
		wantStale bool
	}{
		{"no such job", kept(999, 1, "m1", "aa", 1), fsm.ErrNoSuchJob, false},
		{"a job without checkpoints", kept(plain, 1, "m2", "aa", 1), fsm.ErrInvalidSpec, false},
		{"another machine", kept(job, 1, "m2", "aa", 1), nil, true},
		{"a later attempt", kept(job, 2, "m1", "aa", 1), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := a.apply(fsm.CheckpointKeptType, tc.c)
			if !errors.Is(res.Err, tc.wantErr) || res.Stale != tc.wantStale {
				t.Errorf("got Err %v Stale %v, want %v and %v", res.Err, res.Stale, tc.wantErr, tc.wantStale)
			}
			if in := a.instance(job, 0); in.Checkpoint != nil {
				t.Errorf("got Checkpoint %+v, want none", in.Checkpoint)
			}
		})
	}
}

func TestCheckpointLostMachine(t *testing.T) {
	// A job that checkpoints is restartable: its machine's lost lease
	// queues it again, and the next attempt keeps the checkpoint.
	a, job := checkpointJob(t)
	a.mustOK(fsm.CheckpointKeptType, kept(job, 1, "m1", "aa", 100))
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(30), Machine: "m1"})
	in := a.instance(job, 0)
	if in.Attempt != 2 || in.State != fsm.InstanceQueued || in.Checkpoint == nil || in.Checkpoint.Attempt != 1 {
		t.Fatalf("after m1's lease expired: got attempt %d %s checkpoint %+v, want attempt 2 queued with attempt 1's", in.Attempt, in.State, in.Checkpoint)
	}
	// A late CheckpointKept of the lost attempt is fenced.
	if res := a.apply(fsm.CheckpointKeptType, kept(job, 1, "m1", "cc", 5)); !res.Stale {
		t.Errorf("late CheckpointKept: got Stale false, want true")
	}
}

func TestCheckpointFeature(t *testing.T) {
	s := withCheckpoint(spec("c", 1))
	if got := s.Features(); !slices.Contains(got, fsm.FeatureCheckpoint) {
		t.Errorf("Features() = %v, want FeatureCheckpoint among them", got)
	}
	if fsm.FeatureCheckpoint.Level != fsm.CheckpointKeptType || fsm.CheckpointKeptType != 42 {
		t.Errorf("FeatureCheckpoint level %d, CheckpointKeptType %d; want 42", fsm.FeatureCheckpoint.Level, fsm.CheckpointKeptType)
	}
	if !s.Restartable() {
		t.Errorf("a job that checkpoints is not Restartable")
	}
}

func TestCheckpointSignalWithoutTimeLimit(t *testing.T) {
	// A job that checkpoints may name its warning signal with no time
	// limit: the stub sends it before a vacate. Another job may not.
	a := newApplier(t)
	s := withCheckpoint(spec("c", 1))
	s.WarnSignal, s.WarnLeadSeconds = "USR1", 60
	a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s})
	s.Checkpoint, s.CheckpointExit = nil, 0
	if res := a.apply(fsm.SubmitType, fsm.Submit{At: at(2), Owner: "alice", Spec: s}); res.Err == nil {
		t.Errorf("a job with a warning signal and no time limit, no checkpoint: got no error")
	}
}
