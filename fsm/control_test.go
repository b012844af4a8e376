package fsm_test

import (
	"fmt"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// controlState returns an applier with m1 (8 slots) and one job of six
// instances, 100 MB each: 0 running, 1 placed, 2 queued, 3 exited, 4
// suspended, 5 failed.
func controlState(t *testing.T) (*applier, uint64) {
	t.Helper()
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	id := a.mustQueueJob("alice", "", 6, 100)
	a.place(asg(id, 0, "m1"), asg(id, 1, "m1"), asg(id, 3, "m1"), asg(id, 4, "m1"), asg(id, 5, "m1"))
	a.register(id, 4, "m1", 14)
	if res := a.control(fsm.SuspendType, id); res.Err != nil || res.Affected != 1 {
		t.Fatalf("suspend: got Err %v Affected %d, want nil and 1", res.Err, res.Affected)
	}
	a.register(id, 0, "m1", 10)
	a.register(id, 3, "m1", 13)
	a.term(id, 3, "m1", 0)
	a.register(id, 5, "m1", 15)
	a.term(id, 5, "m1", 1)
	want := []string{fsm.InstanceRunning, fsm.InstancePlaced, fsm.InstanceQueued, fsm.InstanceExited, fsm.InstanceSuspended, fsm.InstanceFailed}
	for i, in := range a.job(id).Instances {
		if in.State != want[i] {
			t.Fatalf("instance %d: got %s, want %s", i, in.State, want[i])
		}
	}
	return a, id
}

func TestJobControl(t *testing.T) {
	tests := []struct {
		name string
		typ  fsm.MessageType
		// wantStates are the instances' states afterwards; wantAttempts
		// their attempts; wantRestart which ones have RestartRequested.
		wantStates   []string
		wantAttempts []uint64
		wantRestart  []bool
		wantAffected int
	}{
		{"suspend", fsm.SuspendType,
			[]string{fsm.InstanceSuspended, fsm.InstancePlaced, fsm.InstanceQueued, fsm.InstanceExited, fsm.InstanceSuspended, fsm.InstanceFailed},
			[]uint64{1, 1, 1, 1, 1, 1}, make([]bool, 6), 1},
		{"resume", fsm.ResumeType,
			[]string{fsm.InstanceRunning, fsm.InstancePlaced, fsm.InstanceQueued, fsm.InstanceExited, fsm.InstanceRunning, fsm.InstanceFailed},
			[]uint64{1, 1, 1, 1, 1, 1}, make([]bool, 6), 1},
		{"restart", fsm.RestartJobType,
			[]string{fsm.InstanceRunning, fsm.InstancePlaced, fsm.InstanceQueued, fsm.InstanceQueued, fsm.InstanceSuspended, fsm.InstanceQueued},
			[]uint64{1, 1, 1, 2, 1, 2}, []bool{true, true, false, false, true, false}, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, id := controlState(t)
			before := a.job(id)
			res := a.control(tc.typ, id)
			if res.Err != nil || res.Affected != tc.wantAffected || res.JobID != id {
				t.Fatalf("got Err %v Affected %d JobID %d, want nil, %d, %d", res.Err, res.Affected, res.JobID, tc.wantAffected, id)
			}
			j := a.job(id)
			if j.ModifyIndex != res.Index {
				t.Errorf("got job ModifyIndex %d, want %d", j.ModifyIndex, res.Index)
			}
			for i, in := range j.Instances {
				old := before.Instances[i]
				if in.State != tc.wantStates[i] || in.Attempt != tc.wantAttempts[i] || in.RestartRequested != tc.wantRestart[i] {
					t.Errorf("instance %d: got state %s attempt %d restart requested %v, want %s, %d, %v",
						i, in.State, in.Attempt, in.RestartRequested, tc.wantStates[i], tc.wantAttempts[i], tc.wantRestart[i])
				}
				changed := in.State != old.State || in.Attempt != old.Attempt || in.RestartRequested != old.RestartRequested
				if changed && in.ModifyIndex != res.Index {
					t.Errorf("instance %d changed: got ModifyIndex %d, want %d", i, in.ModifyIndex, res.Index)
				}
				if !changed && in.ModifyIndex != old.ModifyIndex {
					t.Errorf("instance %d unchanged: got ModifyIndex %d, want %d", i, in.ModifyIndex, old.ModifyIndex)
				}
			}
			// Suspended instances keep their slots and memory.
			counts, mem := a.usage("m1")
			wantActive := 0
			for _, in := range j.Instances {
				if in.Active() {
					wantActive++
				}
			}
			if got := a.running("m1"); got != wantActive || counts[id] != wantActive || mem != int64(100*wantActive) {
				t.Errorf("got Running %d JobCounts %d UsedMemoryMB %d, want %d, %d, %d", got, counts[id], mem, wantActive, wantActive, 100*wantActive)
			}
			// A second identical command changes nothing, except a
			// restart, which queued what had finished and marks the
			// active ones again.
			again := a.control(tc.typ, id)
			if tc.typ != fsm.RestartJobType && (again.Err != nil || again.Affected != 0) {
				t.Errorf("again: got Err %v Affected %d, want nil and 0", again.Err, again.Affected)
			}
		})
	}
}

func TestJobControlIndexes(t *testing.T) {
	a, id := controlState(t)
	suspended := a.instance(id, 4)
	if suspended.SuspendIndex == 0 || suspended.ResumeIndex != 0 {
		t.Fatalf("got SuspendIndex %d ResumeIndex %d, want set and 0", suspended.SuspendIndex, suspended.ResumeIndex)
	}
	res := a.control(fsm.ResumeType, id)
	in := a.instance(id, 4)
	if in.ResumeIndex != res.Index || in.SuspendIndex != suspended.SuspendIndex {
		t.Errorf("after resume: got SuspendIndex %d ResumeIndex %d, want %d and %d", in.SuspendIndex, in.ResumeIndex, suspended.SuspendIndex, res.Index)
	}
	res = a.control(fsm.SuspendType, id)
	for _, i := range []int{0, 4} {
		in := a.instance(id, i)
		if in.SuspendIndex != res.Index || in.SuspendIndex <= in.ResumeIndex {
			t.Errorf("instance %d suspended again: got SuspendIndex %d ResumeIndex %d, want %d and less", i, in.SuspendIndex, in.ResumeIndex, res.Index)
		}
	}
	// A duplicated CHILD_REGISTER does not wake a suspended instance.
	a.register(id, 4, "m1", 14)
	if got := a.instance(id, 4).State; got != fsm.InstanceSuspended {
		t.Errorf("after a duplicate register: got %s, want suspended", got)
	}
	// A new attempt starts with neither index.
	a.control(fsm.RestartJobType, id)
	a.termWith(id, 4, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "TERM"})
	if in := a.instance(id, 4); in.Attempt != 2 || in.SuspendIndex != 0 || in.ResumeIndex != 0 {
		t.Errorf("new attempt: got attempt %d SuspendIndex %d ResumeIndex %d, want 2, 0, 0", in.Attempt, in.SuspendIndex, in.ResumeIndex)
	}
}

func TestJobControlRefused(t *testing.T) {
	for _, typ := range []fsm.MessageType{fsm.SuspendType, fsm.ResumeType, fsm.RestartJobType} {
		tests := []struct {
			name string
			// prepare returns the job to act on.
			prepare func(a *applier, id uint64) uint64
			wantErr error
		}{
			{"unknown job", func(_ *applier, id uint64) uint64 { return id + 100 }, fsm.ErrNoSuchJob},
			{"job zero", func(*applier, uint64) uint64 { return 0 }, fsm.ErrNoSuchJob},
			{"job being killed", func(a *applier, id uint64) uint64 {
				a.mustOK(fsm.KillType, fsm.Kill{At: at(20), JobID: id, By: "alice"})
				return id
			}, fsm.ErrJobFinished},
			{"killed job that ended", func(a *applier, id uint64) uint64 {
				a.mustOK(fsm.KillType, fsm.Kill{At: at(20), JobID: id, By: "alice"})
				a.term(id, 0, "m1", 0)
				a.term(id, 1, "m1", 0)
				a.term(id, 4, "m1", 0)
				if got := a.job(id).State(); got != fsm.JobKilled {
					t.Fatalf("got job state %s, want killed", got)
				}
				return id
			}, fsm.ErrJobFinished},
		}
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%v/%s", typ, tc.name), func(t *testing.T) {
				a, id := controlState(t)
				target := tc.prepare(a, id)
				before := stateBytes(t, a.f)
				res := a.control(typ, target)
				wantErr(t, res.Err, tc.wantErr)
				if res.Affected != 0 {
					t.Errorf("got Affected %d, want 0", res.Affected)
				}
				assertUnchanged(t, a.f, before)
			})
		}
	}
}

// TestJobControlNothingToDo: a command that finds no instance to change
// succeeds with Affected 0 and changes nothing.
func TestJobControlNothingToDo(t *testing.T) {
	tests := []struct {
		name    string
		typ     fsm.MessageType
		prepare func(a *applier, id uint64)
	}{
		{"suspend of a queued job", fsm.SuspendType, func(*applier, uint64) {}},
		{"suspend of a placed instance", fsm.SuspendType, func(a *applier, id uint64) { a.place(asg(id, 0, "m1")) }},
		{"suspend of a finished job", fsm.SuspendType, func(a *applier, id uint64) {
			a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
			a.term(id, 0, "m1", 0)
			a.term(id, 1, "m1", 0)
		}},
		{"resume of a running instance", fsm.ResumeType, func(a *applier, id uint64) {
			a.place(asg(id, 0, "m1"))
			a.register(id, 0, "m1", 10)
		}},
		{"resume of a queued job", fsm.ResumeType, func(*applier, uint64) {}},
		{"restart of a queued job", fsm.RestartJobType, func(*applier, uint64) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			id := a.mustQueueJob("alice", "", 2, 0)
			tc.prepare(a, id)
			before := stateBytes(t, a.f)
			res := a.control(tc.typ, id)
			if res.Err != nil || res.Affected != 0 || res.JobID != id {
				t.Errorf("got Err %v Affected %d JobID %d, want nil, 0, %d", res.Err, res.Affected, res.JobID, id)
			}
			assertUnchanged(t, a.f, before)
		})
	}
}

// TestRestartRequested follows an active attempt marked by RestartJob to
// its end: the next attempt is queued at once (no backoff, whatever the
// restart policy), the history keeps how the attempt ended, and the
// restart policy's count is untouched.
func TestRestartRequested(t *testing.T) {
	tests := []struct {
		name string
		term fsm.ChildTerm // exit fields only
		kill bool          // netkill the job after the restart
		// wantEnd is the ended attempt's state; wantNext whether a
		// second attempt is queued.
		wantEnd    string
		wantReason string
		wantNext   bool
	}{
		{"ends on TERM", fsm.ChildTerm{ExitCode: -1, Signal: "TERM"}, false, fsm.InstanceSignaled, "", true},
		{"exits 0 before the signal", fsm.ChildTerm{ExitCode: 0}, false, fsm.InstanceExited, "", true},
		{"exits 3", fsm.ChildTerm{ExitCode: 3}, false, fsm.InstanceFailed, "", true},
		{"killed for a limit", fsm.ChildTerm{ExitCode: -1, Signal: "KILL", Reason: "memory limit of 20 MB exceeded"}, false, fsm.InstanceKilled, "memory limit of 20 MB exceeded", true},
		{"netkill wins", fsm.ChildTerm{ExitCode: -1, Signal: "TERM"}, true, fsm.InstanceKilled, "", false},
	}
	for _, policy := range []string{fsm.RestartNo, fsm.RestartAlways} {
		for _, tc := range tests {
			t.Run(policy+"/"+tc.name, func(t *testing.T) {
				a, id := restartJob(t, policy, 2, 1)
				a.run(id, 0, 1, "m1", at(3))
				res := a.control(fsm.RestartJobType, id)
				if res.Err != nil || res.Affected != 1 {
					t.Fatalf("restart: got Err %v Affected %d, want nil and 1", res.Err, res.Affected)
				}
				if in := a.instance(id, 0); !in.RestartRequested || in.State != fsm.InstanceRunning || in.Attempt != 1 {
					t.Fatalf("got %+v, want attempt 1 running with restart requested", in)
				}
				if tc.kill {
					a.mustOK(fsm.KillType, fsm.Kill{At: at(31), JobID: id, By: "alice"})
				}
				a.termWith(id, 0, 1, "m1", tc.term)
				in := a.instance(id, 0)
				if !tc.wantNext {
					if in.Attempt != 1 || in.State != tc.wantEnd || len(in.History) != 0 {
						t.Errorf("got attempt %d state %s history %d, want 1, %s, 0", in.Attempt, in.State, len(in.History), tc.wantEnd)
					}
					return
				}
				if in.Attempt != 2 || in.State != fsm.InstanceQueued || !in.NotBefore.IsZero() || in.RestartRequested || in.Restarts != 0 {
					t.Errorf("got attempt %d state %s NotBefore %v RestartRequested %v Restarts %d, want 2, queued, zero, false, 0",
						in.Attempt, in.State, in.NotBefore, in.RestartRequested, in.Restarts)
				}
				if in.Machine != "" || in.PID != 0 || in.Reason != "" || in.Signal != "" || !in.EndedAt.IsZero() {
					t.Errorf("new attempt carries the old one's fields: %+v", in)
				}
				if len(in.History) != 1 {
					t.Fatalf("got %d history entries, want 1", len(in.History))
				}
				h := in.History[0]
				if h.Attempt != 1 || h.Machine != "m1" || h.State != tc.wantEnd || h.Reason != tc.wantReason || !h.EndedAt.Equal(at(40)) {
					t.Errorf("got history %+v, want attempt 1 on m1 ended %s with reason %q at %v", h, tc.wantEnd, tc.wantReason, at(40))
				}
				// The new attempt may be placed at the very time of the
				// CHILD_TERM, and the old one's late events are stale.
				x := fsm.Assignment{JobID: id, Instance: 0, Attempt: 2, Machine: "m2", Key: fsm.AnyKey}
				if res := a.mustOK(fsm.PlaceType, fsm.Place{At: at(40), Assignments: []fsm.Assignment{x}}); len(res.Accepted) != 1 {
					t.Errorf("place the new attempt: got Accepted %v, want it", res.Accepted)
				}
				if res := a.register(id, 0, "m1", 99); !res.Stale {
					t.Errorf("late register of the old attempt: got Stale false, want true")
				}
			})
		}
	}
}

// TestRestartOfFinishedInstances: RestartJob queues a new attempt of every
// finished instance at once, whatever way it ended.
func TestRestartOfFinishedInstances(t *testing.T) {
	tests := []struct {
		name    string
		end     func(a *applier, id uint64)
		wantEnd string
	}{
		{"exited", func(a *applier, id uint64) { a.term(id, 0, "m1", 0) }, fsm.InstanceExited},
		{"failed", func(a *applier, id uint64) { a.term(id, 0, "m1", 2) }, fsm.InstanceFailed},
		{"signaled", func(a *applier, id uint64) {
			a.termWith(id, 0, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "SEGV"})
		}, fsm.InstanceSignaled},
		{"killed for a limit", func(a *applier, id uint64) {
			a.termWith(id, 0, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "KILL", Reason: "run limit of 1m0s exceeded"})
		}, fsm.InstanceKilled},
		{"lost", func(a *applier, _ uint64) { a.leave("m1", "gone") }, fsm.InstanceLost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, id := restartJob(t, fsm.RestartNo, 0, 1)
			a.run(id, 0, 1, "m1", at(3))
			tc.end(a, id)
			if got := a.job(id).State(); got == fsm.JobRunning || got == fsm.JobQueued {
				t.Fatalf("got job state %s, want it finished", got)
			}
			res := a.control(fsm.RestartJobType, id)
			if res.Err != nil || res.Affected != 1 {
				t.Fatalf("got Err %v Affected %d, want nil and 1", res.Err, res.Affected)
			}
			in := a.instance(id, 0)
			if in.Attempt != 2 || in.State != fsm.InstanceQueued || !in.NotBefore.IsZero() || in.ModifyIndex != res.Index {
				t.Errorf("got attempt %d state %s NotBefore %v ModifyIndex %d, want 2, queued, zero, %d", in.Attempt, in.State, in.NotBefore, in.ModifyIndex, res.Index)
			}
			if len(in.History) != 1 || in.History[0].State != tc.wantEnd || in.History[0].Attempt != 1 {
				t.Errorf("got history %+v, want attempt 1 ended %s", in.History, tc.wantEnd)
			}
			if got := a.job(id).State(); got != fsm.JobQueued {
				t.Errorf("got job state %s, want queued", got)
			}
		})
	}
}

// TestChildTermReason: an attempt the stub ended for a queue limit ends
// killed with its reason, and no restart policy starts it again.
func TestChildTermReason(t *testing.T) {
	for _, policy := range []string{fsm.RestartNo, fsm.RestartOnFailure, fsm.RestartAlways} {
		t.Run(policy, func(t *testing.T) {
			a, id := restartJob(t, policy, 3, 1)
			a.run(id, 0, 1, "m1", at(3))
			const reason = "run limit of 1m0s exceeded"
			a.termWith(id, 0, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "KILL", Reason: reason, UserMS: 7})
			in := a.instance(id, 0)
			if in.State != fsm.InstanceKilled || in.Reason != reason || in.Signal != "KILL" || in.UserMS != 7 || in.Attempt != 1 {
				t.Errorf("got state %s reason %q signal %q UserMS %d attempt %d, want killed, %q, KILL, 7, 1", in.State, in.Reason, in.Signal, in.UserMS, in.Attempt, reason)
			}
			if got := a.job(id).State(); got != fsm.JobKilled {
				t.Errorf("got job state %s, want killed", got)
			}
			if got := a.running("m1"); got != 0 {
				t.Errorf("got Running(m1) %d, want 0", got)
			}
		})
	}
}

// TestSuspendedInstanceEnds: a suspended instance can be killed, lost with
// its machine, or end, and frees its slot each time.
func TestSuspendedInstanceEnds(t *testing.T) {
	tests := []struct {
		name      string
		end       func(a *applier, id uint64)
		wantState string
	}{
		{"netkill", func(a *applier, id uint64) {
			if res := a.mustOK(fsm.KillType, fsm.Kill{At: at(31), JobID: id, By: "alice"}); res.Signaled != 1 {
				t.Errorf("kill: got Signaled %d, want 1", res.Signaled)
			}
			a.termWith(id, 0, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "KILL"})
		}, fsm.InstanceKilled},
		{"machine leaves", func(a *applier, _ uint64) { a.leave("m1", "gone") }, fsm.InstanceLost},
		{"killed by the stub for a limit", func(a *applier, id uint64) {
			a.termWith(id, 0, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "KILL", Reason: "run limit of 1m0s exceeded"})
		}, fsm.InstanceKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, id := restartJob(t, fsm.RestartNo, 0, 1)
			a.run(id, 0, 1, "m1", at(3))
			a.control(fsm.SuspendType, id)
			if got := a.running("m1"); got != 1 {
				t.Fatalf("suspended: got Running %d, want 1", got)
			}
			tc.end(a, id)
			if in := a.instance(id, 0); in.State != tc.wantState {
				t.Errorf("got %s, want %s", in.State, tc.wantState)
			}
			if counts, mem := a.usage("m1"); a.running("m1") != 0 || len(counts) != 0 || mem != 0 {
				t.Errorf("got Running %d JobCounts %v UsedMemoryMB %d, want all freed", a.running("m1"), counts, mem)
			}
		})
	}
}
