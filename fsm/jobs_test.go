package fsm_test

import (
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func TestSubmit(t *testing.T) {
	t.Run("ids, default names and queued instances", func(t *testing.T) {
		a := newApplier(t)
		tests := []struct {
			spec      fsm.JobSpec
			wantID    uint64
			wantName  string
			wantCount int
		}{
			{spec("", 0), 1, "job1", 1},
			{spec("build", 3), 2, "build", 3},
			{spec("", 2), 3, "job3", 2},
		}
		for _, tc := range tests {
			res := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(7), Owner: "bob", Spec: tc.spec})
			if res.JobID != tc.wantID || res.Existing {
				t.Errorf("got JobID %d Existing %v, want %d and false", res.JobID, res.Existing, tc.wantID)
			}
			j := a.job(res.JobID)
			if j.Name != tc.wantName {
				t.Errorf("job %d: got name %q, want %q", j.ID, j.Name, tc.wantName)
			}
			if j.Owner != "bob" || !j.SubmittedAt.Equal(at(7)) {
				t.Errorf("job %d: got owner %q submitted %v, want bob and %v", j.ID, j.Owner, j.SubmittedAt, at(7))
			}
			if j.CreateIndex != res.Index || j.ModifyIndex != res.Index {
				t.Errorf("job %d: got CreateIndex %d ModifyIndex %d, want %d", j.ID, j.CreateIndex, j.ModifyIndex, res.Index)
			}
			if len(j.Instances) != tc.wantCount {
				t.Fatalf("job %d: got %d instances, want %d", j.ID, len(j.Instances), tc.wantCount)
			}
			for i, in := range j.Instances {
				if in.Index != i || in.Attempt != 1 || in.State != fsm.InstanceQueued {
					t.Errorf("job %d instance %d: got index %d attempt %d state %q, want %d, 1, queued", j.ID, i, in.Index, in.Attempt, in.State, i)
				}
			}
			if got := j.State(); got != fsm.JobQueued {
				t.Errorf("job %d: got State() %q, want %q", j.ID, got, fsm.JobQueued)
			}
			var byName *fsm.Job
			a.f.Read(func(v fsm.View) { byName, _ = v.JobByName(tc.wantName) })
			if byName == nil || byName.ID != tc.wantID {
				t.Errorf("JobByName(%q): got %v, want job %d", tc.wantName, byName, tc.wantID)
			}
		}
		var queued []fsm.InstanceRef
		a.f.Read(func(v fsm.View) { queued = v.Queued() })
		want := []fsm.InstanceRef{ref(1, 0), ref(2, 0), ref(2, 1), ref(2, 2), ref(3, 0), ref(3, 1)}
		if !slices.Equal(queued, want) {
			t.Errorf("got Queued %v, want %v", queued, want)
		}
	})

	t.Run("JobByName returns the most recent job", func(t *testing.T) {
		a := newApplier(t)
		a.submit("same", 1)
		a.submit("other", 1)
		id := a.submit("same", 1)
		var got uint64
		a.f.Read(func(v fsm.View) {
			if j, ok := v.JobByName("same"); ok {
				got = j.ID
			}
		})
		if got != id {
			t.Errorf("got job %d, want %d", got, id)
		}
	})

	t.Run("idempotency key returns the same job", func(t *testing.T) {
		a := newApplier(t)
		first := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", IdempotencyKey: "k1", Spec: spec("a", 2)})
		before := stateBytes(t, a.f)
		// The retry may even carry a different spec: the key wins.
		again := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(2), Owner: "alice", IdempotencyKey: "k1", Spec: spec("b", 5)})
		if again.JobID != first.JobID || !again.Existing {
			t.Errorf("got JobID %d Existing %v, want %d and true", again.JobID, again.Existing, first.JobID)
		}
		assertUnchanged(t, a.f, before)
		other := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(3), Owner: "alice", IdempotencyKey: "k2", Spec: spec("a", 1)})
		if other.JobID != first.JobID+1 || other.Existing {
			t.Errorf("other key: got JobID %d Existing %v, want %d and false", other.JobID, other.Existing, first.JobID+1)
		}
	})

	invalid := []struct {
		name string
		spec fsm.JobSpec
	}{
		{"no binaries", fsm.JobSpec{Name: "x"}},
		{"empty binaries map", fsm.JobSpec{Binaries: map[string]string{}}},
		{"empty key", fsm.JobSpec{Binaries: map[string]string{"": "/bin/true"}}},
		{"empty path", fsm.JobSpec{Binaries: map[string]string{"x86_64": ""}}},
		{"negative min", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/true"}, Min: -1}},
		{"env without =", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/true"}, Env: []string{"A=1", "B"}}},
		{"env with empty name", fsm.JobSpec{Binaries: map[string]string{"*": "/bin/true"}, Env: []string{"=1"}}},
	}
	for _, tc := range invalid {
		t.Run("invalid/"+tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.submit("existing", 1)
			before := stateBytes(t, a.f)
			res := a.apply(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", IdempotencyKey: "k", Spec: tc.spec})
			wantErr(t, res.Err, fsm.ErrInvalidSpec)
			if res.JobID != 0 {
				t.Errorf("got JobID %d, want 0", res.JobID)
			}
			assertUnchanged(t, a.f, before)
			// The key was not taken by the failed submit.
			res = a.mustOK(fsm.SubmitType, fsm.Submit{At: at(2), Owner: "alice", IdempotencyKey: "k", Spec: spec("ok", 1)})
			if res.Existing || res.JobID != 2 {
				t.Errorf("resubmit: got JobID %d Existing %v, want 2 and false", res.JobID, res.Existing)
			}
		})
	}
}

// TestSubmitPlace creates the job and places what the leader planned for
// it in one entry, re-checked as a Place is; it places nothing when other
// jobs wait (they come first), for a repeated idempotency key, or for a
// refused submit.
func TestSubmitPlace(t *testing.T) {
	plan := func(key string, as ...fsm.Assignment) fsm.SubmitPlace {
		return fsm.SubmitPlace{
			Submit:      fsm.Submit{At: at(5), Owner: "u", IdempotencyKey: key, Spec: spec("sp", 3)},
			Assignments: as,
		}
	}
	t.Run("placed at once, the rest queued", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 1)
		a.join("m2", "x86_64", 2)
		// Instance 0 on m1 and 1 on m2 fit; instance 2 on the full m1 does
		// not and waits for the scheduler.
		res := a.mustOK(fsm.SubmitPlaceType, plan("", asg(0, 0, "m1"), asg(0, 1, "m2"), asg(0, 2, "m1")))
		if res.JobID == 0 || len(res.Accepted) != 2 || res.Dropped != 1 {
			t.Fatalf("got job %d, %d accepted, %d dropped; want a job, 2 and 1", res.JobID, len(res.Accepted), res.Dropped)
		}
		for i, want := range []string{fsm.InstancePlaced, fsm.InstancePlaced, fsm.InstanceQueued} {
			if in := a.instance(res.JobID, i); in.State != want || (want == fsm.InstancePlaced && !in.PlacedAt.Equal(at(5))) {
				t.Errorf("instance %d: got %s placed at %v, want %s", i, in.State, in.PlacedAt, want)
			}
		}
		if got := a.running("m1") + a.running("m2"); got != 2 {
			t.Errorf("got %d slots taken, want 2", got)
		}
	})
	t.Run("others wait", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		earlier := a.submit("earlier", 1)
		res := a.mustOK(fsm.SubmitPlaceType, plan("", asg(0, 0, "m1")))
		if len(res.Accepted) != 0 || a.instance(res.JobID, 0).State != fsm.InstanceQueued {
			t.Errorf("placed %v ahead of the queued job %d, want nothing placed", res.Accepted, earlier)
		}
	})
	t.Run("repeated key", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		first := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "u", IdempotencyKey: "k", Spec: spec("sp", 1)})
		a.mustOK(fsm.KillType, fsm.Kill{At: at(2), JobID: first.JobID, By: "u"})
		res := a.mustOK(fsm.SubmitPlaceType, plan("k", asg(0, 0, "m1")))
		if !res.Existing || res.JobID != first.JobID || len(res.Accepted) != 0 {
			t.Errorf("got existing %v job %d accepted %v, want job %d found and nothing placed", res.Existing, res.JobID, res.Accepted, first.JobID)
		}
	})
	t.Run("refused submit", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		before := stateBytes(t, a.f)
		c := plan("", asg(0, 0, "m1"))
		c.Submit.Spec.Binaries = nil
		res := a.apply(fsm.SubmitPlaceType, c)
		wantErr(t, res.Err, fsm.ErrInvalidSpec)
		assertUnchanged(t, a.f, before)
	})
}

// A Submits batch creates its jobs in order at one index, each answered
// as its own Submit would be: a refused one with its error, one repeating
// an earlier key of the batch with that job.
func TestSubmits(t *testing.T) {
	a := newApplier(t)
	bad := spec("bad", 1)
	bad.Binaries = nil
	res := a.mustOK(fsm.SubmitsType, fsm.Submits{Submits: []fsm.Submit{
		{At: at(1), Owner: "u", IdempotencyKey: "k", Spec: spec("first", 2)},
		{At: at(1), Owner: "u", Spec: bad},
		{At: at(1), Owner: "v", IdempotencyKey: "k", Spec: spec("again", 1)},
		{At: at(1), Owner: "v", Spec: spec("second", 1)},
	}})
	if len(res.Events) != 4 {
		t.Fatalf("got %d results, want 4", len(res.Events))
	}
	first, refused, again, second := res.Events[0], res.Events[1], res.Events[2], res.Events[3]
	if first.JobID == 0 || first.Err != nil || first.Existing {
		t.Errorf("first: got %+v, want a new job", first)
	}
	wantErr(t, refused.Err, fsm.ErrInvalidSpec)
	if !again.Existing || again.JobID != first.JobID {
		t.Errorf("repeated key: got %+v, want job %d found", again, first.JobID)
	}
	if second.JobID != first.JobID+1 || second.Err != nil {
		t.Errorf("second: got %+v, want job %d", second, first.JobID+1)
	}
	for _, r := range []*fsm.Result{first, second} {
		if j := a.job(r.JobID); j.CreateIndex != res.Index || len(j.Instances) != max(j.Spec.Min, 1) {
			t.Errorf("job %d: created at %d with %d instances, want index %d", j.ID, j.CreateIndex, len(j.Instances), res.Index)
		}
	}
	if got := a.job(first.JobID).Name; got != "first" {
		t.Errorf("first job's name = %q, want first", got)
	}
}

func TestKill(t *testing.T) {
	t.Run("queued instances are killed at once", func(t *testing.T) {
		a := newApplier(t)
		id := a.submit("j", 2)
		res := a.mustOK(fsm.KillType, fsm.Kill{At: at(9), JobID: id, By: "alice", Signal: "TERM"})
		if res.Dequeued != 2 || res.Signaled != 0 || res.JobID != id {
			t.Errorf("got Dequeued %d Signaled %d JobID %d, want 2, 0, %d", res.Dequeued, res.Signaled, res.JobID, id)
		}
		j := a.job(id)
		for _, in := range j.Instances {
			if in.State != fsm.InstanceKilled || !in.EndedAt.Equal(at(9)) {
				t.Errorf("instance %d: got state %q ended %v, want killed at %v", in.Index, in.State, in.EndedAt, at(9))
			}
		}
		if !j.KillRequested || j.KilledBy != "alice" || j.KillSignal != "TERM" {
			t.Errorf("got KillRequested %v KilledBy %q KillSignal %q, want true, alice, TERM", j.KillRequested, j.KilledBy, j.KillSignal)
		}
		if got := j.State(); got != fsm.JobKilled {
			t.Errorf("got State() %q, want %q", got, fsm.JobKilled)
		}
		var queued []fsm.InstanceRef
		a.f.Read(func(v fsm.View) { queued = v.Queued() })
		if len(queued) != 0 {
			t.Errorf("got Queued %v, want none", queued)
		}
	})

	t.Run("placed and running instances are marked for signalling", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		id := a.submit("j", 3)
		a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
		a.register(id, 1, "m1", 42)
		res := a.mustOK(fsm.KillType, fsm.Kill{At: at(9), JobID: id, By: "alice"})
		if res.Signaled != 2 || res.Dequeued != 1 {
			t.Errorf("got Signaled %d Dequeued %d, want 2 and 1", res.Signaled, res.Dequeued)
		}
		for i, want := range []string{fsm.InstancePlaced, fsm.InstanceRunning, fsm.InstanceKilled} {
			in := a.instance(id, i)
			if in.State != want {
				t.Errorf("instance %d: got state %q, want %q", i, in.State, want)
			}
			if wantKR := i < 2; in.KillRequested != wantKR {
				t.Errorf("instance %d: got KillRequested %v, want %v", i, in.KillRequested, wantKR)
			}
		}
		if got := a.running("m1"); got != 2 {
			t.Errorf("got Running %d, want 2 (slots held until CHILD_TERM)", got)
		}
		if got := a.job(id).State(); got != fsm.JobRunning {
			t.Errorf("got State() %q, want %q", got, fsm.JobRunning)
		}
		// A second kill while instances still run signals them again.
		res = a.mustOK(fsm.KillType, fsm.Kill{At: at(10), JobID: id, By: "alice", Signal: "KILL"})
		if res.Signaled != 2 || res.Dequeued != 0 {
			t.Errorf("second kill: got Signaled %d Dequeued %d, want 2 and 0", res.Signaled, res.Dequeued)
		}
		for i := range 2 {
			a.term(id, i, "m1", 0)
		}
		if got := a.job(id).State(); got != fsm.JobKilled {
			t.Errorf("after terms: got State() %q, want %q", got, fsm.JobKilled)
		}
	})

	t.Run("place after kill drops the job's instances", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 4)
		id := a.submit("j", 2)
		a.place(asg(id, 0, "m1"))
		a.mustOK(fsm.KillType, fsm.Kill{At: at(9), JobID: id, By: "alice"})
		res := a.place(asg(id, 1, "m1"))
		if len(res.Accepted) != 0 || res.Dropped != 1 {
			t.Errorf("got Accepted %v Dropped %d, want none and 1", res.Accepted, res.Dropped)
		}
	})

	errs := []struct {
		name  string
		setup func(a *applier) uint64
		want  error
	}{
		{"unknown job", func(a *applier) uint64 { a.submit("j", 1); return 99 }, fsm.ErrNoSuchJob},
		{"job exited", func(a *applier) uint64 {
			a.join("m1", "x86_64", 1)
			id := a.submit("j", 1)
			a.place(asg(id, 0, "m1"))
			a.term(id, 0, "m1", 0)
			return id
		}, fsm.ErrJobFinished},
		{"job failed", func(a *applier) uint64 {
			a.join("m1", "x86_64", 1)
			id := a.submit("j", 1)
			a.place(asg(id, 0, "m1"))
			a.term(id, 0, "m1", 3)
			return id
		}, fsm.ErrJobFinished},
		{"job lost", func(a *applier) uint64 {
			a.join("m1", "x86_64", 1)
			id := a.submit("j", 1)
			a.place(asg(id, 0, "m1"))
			a.leave("m1", "crash")
			return id
		}, fsm.ErrJobFinished},
		// A job whose kill has completed is finished too: killing it again
		// must neither succeed nor overwrite who killed it.
		{"job already killed", func(a *applier) uint64 {
			id := a.submit("j", 1)
			a.mustOK(fsm.KillType, fsm.Kill{At: at(5), JobID: id, By: "alice"})
			return id
		}, fsm.ErrJobFinished},
	}
	for _, tc := range errs {
		t.Run("error/"+tc.name, func(t *testing.T) {
			a := newApplier(t)
			id := tc.setup(a)
			before := stateBytes(t, a.f)
			res := a.apply(fsm.KillType, fsm.Kill{At: at(20), JobID: id, By: "mallory", Signal: "KILL"})
			wantErr(t, res.Err, tc.want)
			if res.Signaled != 0 || res.Dequeued != 0 {
				t.Errorf("got Signaled %d Dequeued %d, want 0 and 0", res.Signaled, res.Dequeued)
			}
			assertUnchanged(t, a.f, before)
		})
	}
}

func TestJobState(t *testing.T) {
	tests := []struct {
		name   string
		states []string
		want   string
	}{
		{"no instances", nil, fsm.JobDone},
		{"all queued", []string{fsm.InstanceQueued, fsm.InstanceQueued}, fsm.JobQueued},
		{"placed beats queued", []string{fsm.InstanceQueued, fsm.InstancePlaced}, fsm.JobRunning},
		{"running beats failed", []string{fsm.InstanceFailed, fsm.InstanceRunning}, fsm.JobRunning},
		{"queued beats killed", []string{fsm.InstanceKilled, fsm.InstanceQueued}, fsm.JobQueued},
		{"all exited", []string{fsm.InstanceExited, fsm.InstanceExited}, fsm.JobDone},
		{"one failed", []string{fsm.InstanceExited, fsm.InstanceFailed}, fsm.JobFailed},
		{"one signaled", []string{fsm.InstanceSignaled, fsm.InstanceExited}, fsm.JobFailed},
		{"one lost", []string{fsm.InstanceExited, fsm.InstanceLost}, fsm.JobFailed},
		{"killed beats failed", []string{fsm.InstanceFailed, fsm.InstanceKilled}, fsm.JobKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &fsm.Job{}
			for i, s := range tc.states {
				j.Instances = append(j.Instances, fsm.Instance{Index: i, State: s})
			}
			if got := j.State(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInstancePredicates(t *testing.T) {
	tests := []struct {
		state            string
		finished, active bool
	}{
		{fsm.InstanceQueued, false, false},
		{fsm.InstancePlaced, false, true},
		{fsm.InstanceRunning, false, true},
		{fsm.InstanceExited, true, false},
		{fsm.InstanceFailed, true, false},
		{fsm.InstanceSignaled, true, false},
		{fsm.InstanceKilled, true, false},
		{fsm.InstanceLost, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.state, func(t *testing.T) {
			in := fsm.Instance{State: tc.state}
			if got := in.Finished(); got != tc.finished {
				t.Errorf("Finished(): got %v, want %v", got, tc.finished)
			}
			if got := in.Active(); got != tc.active {
				t.Errorf("Active(): got %v, want %v", got, tc.active)
			}
		})
	}
}
