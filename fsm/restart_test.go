package fsm_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// restartJob returns an applier with m1 and m2 up (2 CPUs each) and a job
// of n instances under the restart policy, none placed.
func restartJob(t *testing.T, policy string, maxRestarts, n int) (*applier, uint64) {
	t.Helper()
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.join("m2", "x86_64", 2)
	s := spec("r", n)
	s.Restart, s.MaxRestarts, s.MemoryMB = policy, maxRestarts, 100
	return a, a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
}

// run places an attempt of an instance on a machine and registers it.
func (a *applier) run(job uint64, inst int, attempt uint64, machine string, when time.Time) {
	a.tb.Helper()
	x := fsm.Assignment{JobID: job, Instance: inst, Attempt: attempt, Machine: machine, Key: fsm.AnyKey}
	if res := a.mustOK(fsm.PlaceType, fsm.Place{At: when, Assignments: []fsm.Assignment{x}}); len(res.Accepted) != 1 {
		a.tb.Fatalf("place %d/%d attempt %d on %s: got Accepted %v, want one", job, inst, attempt, machine, res.Accepted)
	}
	a.mustOK(fsm.ChildRegisterType, fsm.ChildRegister{At: when, JobID: job, Instance: inst, Attempt: attempt, Machine: machine, PID: 100 + int(attempt)})
}

// end is one way an attempt ends, applied to instance 0 running attempt 1
// on m1 since at(3); the CHILD_TERM is stamped at(60).
type end struct {
	name  string
	term  fsm.ChildTerm // At, JobID, Instance, Attempt, Machine filled in
	kill  bool          // netkill the job first
	lost  bool          // m1 leaves the pool first
	state string        // the state the attempt ends in
}

var ends = []end{
	{name: "exit 0", term: fsm.ChildTerm{ExitCode: 0}, state: fsm.InstanceExited},
	{name: "exit 2", term: fsm.ChildTerm{ExitCode: 2}, state: fsm.InstanceFailed},
	{name: "start error", term: fsm.ChildTerm{ExitCode: -1, Error: "exec: no such file"}, state: fsm.InstanceFailed},
	{name: "signal", term: fsm.ChildTerm{ExitCode: -1, Signal: "SEGV"}, state: fsm.InstanceSignaled},
	{name: "netkill", term: fsm.ChildTerm{ExitCode: -1, Signal: "TERM"}, kill: true, state: fsm.InstanceKilled},
	{name: "lost, then exit 1", term: fsm.ChildTerm{ExitCode: 1}, lost: true, state: fsm.InstanceFailed},
	{name: "lost, then exit 0", term: fsm.ChildTerm{ExitCode: 0}, lost: true, state: fsm.InstanceExited},
}

func TestRestartPolicy(t *testing.T) {
	tests := []struct {
		policy string
		// restarts names the ends after which the instance restarts.
		restarts []string
	}{
		{"", nil},
		{fsm.RestartNo, nil},
		{fsm.RestartOnFailure, []string{"exit 2", "start error", "signal", "lost, then exit 1"}},
		{fsm.RestartAlways, []string{"exit 0", "exit 2", "start error", "signal", "lost, then exit 1", "lost, then exit 0"}},
	}
	for _, tc := range tests {
		for _, e := range ends {
			t.Run("policy="+tc.policy+"/"+e.name, func(t *testing.T) {
				a, id := restartJob(t, tc.policy, 0, 1)
				a.run(id, 0, 1, "m1", at(3))
				if e.kill {
					a.mustOK(fsm.KillType, fsm.Kill{At: at(50), JobID: id, By: "alice", Signal: "TERM"})
				}
				if e.lost {
					a.leave("m1", "partition")
				}
				term := e.term
				term.At, term.JobID, term.Instance, term.Attempt, term.Machine = at(60), id, 0, 1, "m1"
				term.UserMS = 9
				res := a.mustOK(fsm.ChildTermType, term)
				if res.Stale {
					t.Fatalf("got Stale true, want false")
				}
				in := a.instance(id, 0)
				if !slices.Contains(tc.restarts, e.name) {
					if in.State != e.state || in.Attempt != 1 || in.Restarts != 0 || len(in.History) != 0 || !in.NotBefore.IsZero() {
						t.Errorf("got state %q attempt %d restarts %d history %v not before %v, want %q, 1, 0, none, zero",
							in.State, in.Attempt, in.Restarts, in.History, in.NotBefore, e.state)
					}
					return
				}
				want := fsm.Instance{
					Index:       0,
					Attempt:     2,
					State:       fsm.InstanceQueued,
					NotBefore:   at(60).Add(500 * time.Millisecond),
					Restarts:    1,
					ModifyIndex: res.Index,
					History: []fsm.AttemptEnd{{
						Attempt: 1, Machine: "m1", Key: fsm.AnyKey, State: e.state, ExitCode: term.ExitCode,
						Signal: term.Signal, Error: term.Error, UserMS: 9, PlacedAt: at(3), StartedAt: at(3), EndedAt: at(60),
					}},
				}
				if !reflect.DeepEqual(in, want) {
					t.Errorf("restarted instance:\ngot  %+v\nwant %+v", in, want)
				}
				var queued []fsm.InstanceRef
				a.f.Read(func(v fsm.View) { queued = v.Queued() })
				if want := []fsm.InstanceRef{ref(id, 0)}; !slices.Equal(queued, want) {
					t.Errorf("got Queued %v, want %v", queued, want)
				}
				if counts, used := a.usage("m1"); len(counts) != 0 || used != 0 || a.running("m1") != 0 {
					t.Errorf("m1: got JobCounts %v UsedMemoryMB %d Running %d, want all empty", counts, used, a.running("m1"))
				}
				if j := a.job(id); j.State() != fsm.JobQueued || j.ModifyIndex != res.Index {
					t.Errorf("got job state %q ModifyIndex %d, want %q and %d", j.State(), j.ModifyIndex, fsm.JobQueued, res.Index)
				}
			})
		}
	}
}

func TestRestartLimit(t *testing.T) {
	tests := []struct {
		name        string
		maxRestarts int
		want        int
	}{
		{"zero means the default", 0, fsm.DefaultMaxRestarts},
		{"one", 1, 1},
		{"five", 5, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, id := restartJob(t, fsm.RestartAlways, tc.maxRestarts, 1)
			for attempt := uint64(1); ; attempt++ {
				if attempt > 20 {
					t.Fatalf("still restarting after 20 attempts")
				}
				a.run(id, 0, attempt, "m1", at(int(attempt)*100))
				a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(int(attempt)*100 + 10), JobID: id, Instance: 0, Attempt: attempt, Machine: "m1", ExitCode: int(attempt)})
				if in := a.instance(id, 0); in.State != fsm.InstanceQueued {
					break
				}
			}
			in := a.instance(id, 0)
			if in.State != fsm.InstanceFailed || in.Restarts != tc.want || in.Attempt != uint64(tc.want+1) || len(in.History) != tc.want {
				t.Fatalf("got state %q restarts %d attempt %d history %d, want failed, %d, %d, %d",
					in.State, in.Restarts, in.Attempt, len(in.History), tc.want, tc.want+1, tc.want)
			}
			for i, h := range in.History {
				n := i + 1
				if h.Attempt != uint64(n) || h.ExitCode != n || h.State != fsm.InstanceFailed || !h.StartedAt.Equal(at(n*100)) || !h.EndedAt.Equal(at(n*100+10)) {
					t.Errorf("history %d: got %+v, want attempt %d exit %d failed, started %v ended %v", i, h, n, n, at(n*100), at(n*100+10))
				}
			}
			// The last attempt's own result stays on the instance.
			if in.ExitCode != tc.want+1 || in.Machine != "m1" {
				t.Errorf("got exit code %d machine %q, want %d and m1", in.ExitCode, in.Machine, tc.want+1)
			}
		})
	}

	t.Run("on-failure stops at the first success", func(t *testing.T) {
		a, id := restartJob(t, fsm.RestartOnFailure, 5, 1)
		a.run(id, 0, 1, "m1", at(10))
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(20), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 1})
		a.run(id, 0, 2, "m2", at(30))
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(40), JobID: id, Instance: 0, Attempt: 2, Machine: "m2"})
		in := a.instance(id, 0)
		if in.State != fsm.InstanceExited || in.Restarts != 1 || len(in.History) != 1 || in.History[0].Machine != "m1" || in.Machine != "m2" {
			t.Errorf("got state %q restarts %d history %+v machine %q, want exited, 1, one on m1, m2", in.State, in.Restarts, in.History, in.Machine)
		}
		if got := a.job(id).State(); got != fsm.JobDone {
			t.Errorf("got job state %q, want %q", got, fsm.JobDone)
		}
	})
}

func TestRestartBackoff(t *testing.T) {
	// The delay before restart n: 500 ms doubling, capped at 30 s.
	want := []time.Duration{
		500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second,
	}
	a, id := restartJob(t, fsm.RestartAlways, 10, 1)
	for n := 1; n <= len(want); n++ {
		attempt := uint64(n)
		ended := at(n * 100).Add(7 * time.Millisecond)
		a.run(id, 0, attempt, "m1", at(n*100-50))
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: ended, JobID: id, Instance: 0, Attempt: attempt, Machine: "m1"})
		in := a.instance(id, 0)
		if in.Restarts != n {
			t.Fatalf("restart %d: got Restarts %d", n, in.Restarts)
		}
		if got := in.NotBefore.Sub(ended); got != want[n-1] {
			t.Errorf("restart %d: got NotBefore = end + %v, want end + %v", n, got, want[n-1])
		}
	}
}

func TestRestartFencesOldAttempt(t *testing.T) {
	// restarted returns a job whose instance 0 failed on m1 at attempt 1
	// and is queued at attempt 2.
	restarted := func(t *testing.T) (*applier, uint64) {
		a, id := restartJob(t, fsm.RestartOnFailure, 0, 1)
		a.run(id, 0, 1, "m1", at(3))
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(10), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 1})
		if in := a.instance(id, 0); in.State != fsm.InstanceQueued || in.Attempt != 2 {
			t.Fatalf("got state %q attempt %d, want queued at 2", in.State, in.Attempt)
		}
		return a, id
	}
	oldTerm := func(id uint64, machine string, attempt uint64) fsm.ChildTerm {
		return fsm.ChildTerm{At: at(20), JobID: id, Instance: 0, Attempt: attempt, Machine: machine, ExitCode: 1}
	}
	tests := []struct {
		name string
		// placeAgain runs attempt 2 on m2 before the stale event.
		placeAgain bool
		typ        fsm.MessageType
		body       func(id uint64) any
	}{
		{"duplicate term of the old attempt while queued", false, fsm.ChildTermType, func(id uint64) any { return oldTerm(id, "m1", 1) }},
		{"register of the old attempt while queued", false, fsm.ChildRegisterType, func(id uint64) any {
			return fsm.ChildRegister{At: at(20), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", PID: 5}
		}},
		{"term of the new attempt while still queued", false, fsm.ChildTermType, func(id uint64) any { return oldTerm(id, "", 2) }},
		{"term of the old attempt while the new one runs", true, fsm.ChildTermType, func(id uint64) any { return oldTerm(id, "m1", 1) }},
		{"term of the new attempt from the old machine", true, fsm.ChildTermType, func(id uint64) any { return oldTerm(id, "m1", 2) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, id := restarted(t)
			if tc.placeAgain {
				a.run(id, 0, 2, "m2", at(15))
			}
			before := a.instance(id, 0)
			m2Before := a.running("m2")
			res := a.apply(tc.typ, tc.body(id))
			wantErr(t, res.Err, nil)
			if !res.Stale {
				t.Errorf("got Stale false, want true")
			}
			got := a.instance(id, 0)
			if got.StaleEvents != before.StaleEvents+1 {
				t.Errorf("got StaleEvents %d, want %d", got.StaleEvents, before.StaleEvents+1)
			}
			got.StaleEvents, got.ModifyIndex = before.StaleEvents, before.ModifyIndex
			if !reflect.DeepEqual(got, before) {
				t.Errorf("instance changed beyond its stale count (restarted again?):\ngot  %+v\nwant %+v", got, before)
			}
			if got := a.running("m2"); got != m2Before {
				t.Errorf("got Running(m2) %d, want %d", got, m2Before)
			}
		})
	}
}

func TestRestartAndKill(t *testing.T) {
	t.Run("kill while waiting to restart", func(t *testing.T) {
		a, id := restartJob(t, fsm.RestartAlways, 0, 1)
		a.run(id, 0, 1, "m1", at(3))
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(10), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 1})
		res := a.mustOK(fsm.KillType, fsm.Kill{At: at(11), JobID: id, By: "alice"})
		if res.Dequeued != 1 {
			t.Errorf("got Dequeued %d, want 1", res.Dequeued)
		}
		in := a.instance(id, 0)
		if in.State != fsm.InstanceKilled || len(in.History) != 1 || in.Attempt != 2 {
			t.Errorf("got state %q history %v attempt %d, want killed with one history entry at attempt 2", in.State, in.History, in.Attempt)
		}
		if got := a.job(id).State(); got != fsm.JobKilled {
			t.Errorf("got job state %q, want %q", got, fsm.JobKilled)
		}
	})

	// A job is killed while one instance runs and another is lost; the
	// lost instance's stub comes back and reports a failure. The job is
	// being killed, so nothing of it may be queued again: Place refuses
	// every assignment of a kill-requested job, so a restarted instance
	// would wait forever and the job would never end.
	t.Run("late failure of a lost instance after kill", func(t *testing.T) {
		a, id := restartJob(t, fsm.RestartOnFailure, 0, 2)
		a.run(id, 0, 1, "m1", at(3))
		a.run(id, 1, 1, "m2", at(3))
		a.leave("m1", "partition")
		a.mustOK(fsm.KillType, fsm.Kill{At: at(55), JobID: id, By: "alice"})
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(56), JobID: id, Instance: 1, Attempt: 1, Machine: "m2", ExitCode: -1, Signal: "TERM"})
		a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(60), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 1})
		if in := a.instance(id, 0); in.State == fsm.InstanceQueued {
			t.Errorf("got instance 0 queued again at attempt %d after the job was killed, want it ended", in.Attempt)
		}
		if got := a.job(id).State(); got == fsm.JobQueued || got == fsm.JobRunning {
			t.Errorf("got job state %q, want it ended", got)
		}
	})
}
