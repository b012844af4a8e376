package fsm_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// setQueue declares or replaces a queue at run time, failing the test if
// it is refused.
func (a *applier) setQueue(q fsm.DeclaredQueue) *fsm.Result {
	a.tb.Helper()
	return a.mustOK(fsm.SetQueueType, fsm.SetQueue{At: at(5), By: "tclark", Queue: q})
}

// queueJob submits a job of n instances of /bin/true to a queue ("" for
// none) asking memMB per instance; the result may carry an error.
func (a *applier) queueJob(owner, queueName string, n int, memMB int64) *fsm.Result {
	a.tb.Helper()
	s := spec("", n)
	s.Queue, s.MemoryMB = queueName, memMB
	return a.apply(fsm.SubmitType, fsm.Submit{At: at(1), Owner: owner, Spec: s})
}

// mustQueueJob is queueJob failing the test on a refusal; it returns the id.
func (a *applier) mustQueueJob(owner, queueName string, n int, memMB int64) uint64 {
	a.tb.Helper()
	res := a.queueJob(owner, queueName, n, memMB)
	if res.Err != nil {
		a.tb.Fatalf("submit to queue %q: got error %v, want nil", queueName, res.Err)
	}
	return res.JobID
}

// qc is what a queue holds: unfinished jobs, waiting and active instances.
type qc struct{ jobs, waiting, active int }

// queueCounts returns View.Queue's counters for a queue, failing the test
// if the queue does not exist.
func (a *applier) queueCounts(name string) qc {
	a.tb.Helper()
	var q fsm.QueueView
	var ok bool
	a.f.Read(func(v fsm.View) { q, ok = v.Queue(name) })
	if !ok {
		a.tb.Fatalf("queue %q: not found", name)
	}
	return qc{q.Jobs, q.Waiting, q.Active}
}

// queueNames returns the names View.Queues lists, in its order.
func queueNames(f *fsm.FSM) []string {
	var names []string
	f.Read(func(v fsm.View) {
		for _, q := range v.Queues() {
			names = append(names, q.Name)
		}
	})
	return names
}

func TestSetQueue(t *testing.T) {
	tests := []struct {
		name    string
		before  []fsm.DeclaredQueue // set first, in order
		set     fsm.DeclaredQueue
		wantErr error
		// wantNames is View.Queues' order afterwards (on success).
		wantNames []string
	}{
		{"new queue", nil, fsm.DeclaredQueue{Name: "batch", Priority: 3, MaxSize: 5, MaxActive: 2, MaxRunSeconds: 60, MaxMemMB: 100},
			nil, []string{"default", "batch"}},
		{"replace keeps the declaration order", []fsm.DeclaredQueue{{Name: "a", MaxSize: 1}, {Name: "b"}}, fsm.DeclaredQueue{Name: "a", MaxSize: 9},
			nil, []string{"default", "a", "b"}},
		{"limits back to none", []fsm.DeclaredQueue{{Name: "a", MaxSize: 1, MaxActive: 1}}, fsm.DeclaredQueue{Name: "a"},
			nil, []string{"default", "a"}},
		{"declaring the default queue", []fsm.DeclaredQueue{{Name: "a"}}, fsm.DeclaredQueue{Name: fsm.DefaultQueue, Priority: -1, MaxActive: 7},
			nil, []string{"a", "default"}},
		{"no name", nil, fsm.DeclaredQueue{MaxSize: 1}, fsm.ErrInvalidDatabase, nil},
		{"negative max size", nil, fsm.DeclaredQueue{Name: "q", MaxSize: -1}, fsm.ErrInvalidDatabase, nil},
		{"negative max active", nil, fsm.DeclaredQueue{Name: "q", MaxActive: -1}, fsm.ErrInvalidDatabase, nil},
		{"negative max run", nil, fsm.DeclaredQueue{Name: "q", MaxRunSeconds: -1}, fsm.ErrInvalidDatabase, nil},
		{"negative max mem", nil, fsm.DeclaredQueue{Name: "q", MaxMemMB: -1}, fsm.ErrInvalidDatabase, nil},
		{"invalid replacement keeps the old limits", []fsm.DeclaredQueue{{Name: "q", MaxSize: 3}}, fsm.DeclaredQueue{Name: "q", MaxSize: -3}, fsm.ErrInvalidDatabase, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			for _, q := range tc.before {
				a.setQueue(q)
			}
			before := stateBytes(t, a.f)
			res := a.apply(fsm.SetQueueType, fsm.SetQueue{At: at(6), By: "tclark", Queue: tc.set})
			wantErr(t, res.Err, tc.wantErr)
			if tc.wantErr != nil {
				assertUnchanged(t, a.f, before)
				return
			}
			if res.Index != a.next-1 {
				t.Errorf("got Index %d, want %d", res.Index, a.next-1)
			}
			var got fsm.QueueView
			var ok bool
			a.f.Read(func(v fsm.View) { got, ok = v.Queue(tc.set.Name) })
			if !ok || !reflect.DeepEqual(got.DeclaredQueue, tc.set) {
				t.Errorf("got queue %+v (found %v), want %+v", got.DeclaredQueue, ok, tc.set)
			}
			if names := queueNames(a.f); !slices.Equal(names, tc.wantNames) {
				t.Errorf("got Queues %v, want %v", names, tc.wantNames)
			}
			// A restored replica holds the same queues.
			b := restored(t, snapshotBytes(t, a.f))
			if names := queueNames(b); !slices.Equal(names, tc.wantNames) {
				t.Errorf("after restore: got Queues %v, want %v", names, tc.wantNames)
			}
		})
	}
}

// TestSetQueueIsolatedFromSnapshot: a snapshot taken before a SetQueue or
// RemoveQueue persists the queues as they were.
func TestSetQueueIsolatedFromSnapshot(t *testing.T) {
	a := newApplier(t)
	a.setQueue(fsm.DeclaredQueue{Name: "a", MaxSize: 1})
	a.setQueue(fsm.DeclaredQueue{Name: "b", MaxSize: 2})
	snap, err := a.f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	want := snapshotBytes(t, a.f)
	a.setQueue(fsm.DeclaredQueue{Name: "a", MaxSize: 100})
	a.mustOK(fsm.RemoveQueueType, fsm.RemoveQueue{At: at(7), Name: "a"})
	a.setQueue(fsm.DeclaredQueue{Name: "c"})
	if got := persist(t, snap); string(got) != string(want) {
		t.Errorf("snapshot changed by later queue commands:\ngot:  %s\nwant: %s", got, want)
	}
}

func TestRemoveQueue(t *testing.T) {
	tests := []struct {
		name string
		// prepare builds the state on m1 (4 slots), with queue q declared,
		// and returns the queue to remove.
		prepare func(a *applier) string
		wantErr error
	}{
		{"empty queue", func(*applier) string { return "q" }, nil},
		{"queue whose jobs all finished", func(a *applier) string {
			id := a.mustQueueJob("alice", "q", 1, 0)
			a.place(asg(id, 0, "m1"))
			a.register(id, 0, "m1", 10)
			a.term(id, 0, "m1", 0)
			return "q"
		}, nil},
		{"queue whose queued job was killed", func(a *applier) string {
			id := a.mustQueueJob("alice", "q", 2, 0)
			a.mustOK(fsm.KillType, fsm.Kill{At: at(8), JobID: id, By: "alice"})
			return "q"
		}, nil},
		{"queue declared by the database", func(a *applier) string {
			a.load(fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "dbq", MaxSize: 3}}})
			return "dbq"
		}, nil},
		{"unknown queue", func(*applier) string { return "nosuch" }, fsm.ErrNoSuchQueue},
		{"the default queue", func(*applier) string { return fsm.DefaultQueue }, fsm.ErrQueueInUse},
		{"the declared default queue", func(a *applier) string {
			a.setQueue(fsm.DeclaredQueue{Name: fsm.DefaultQueue, MaxActive: 1})
			return fsm.DefaultQueue
		}, fsm.ErrQueueInUse},
		{"queue with a queued job", func(a *applier) string {
			a.mustQueueJob("alice", "q", 1, 0)
			return "q"
		}, fsm.ErrQueueInUse},
		{"queue with a running job", func(a *applier) string {
			id := a.mustQueueJob("alice", "q", 1, 0)
			a.place(asg(id, 0, "m1"))
			a.register(id, 0, "m1", 10)
			return "q"
		}, fsm.ErrQueueInUse},
		{"queue with a job being killed", func(a *applier) string {
			id := a.mustQueueJob("alice", "q", 1, 0)
			a.place(asg(id, 0, "m1"))
			a.mustOK(fsm.KillType, fsm.Kill{At: at(8), JobID: id, By: "alice"})
			return "q"
		}, fsm.ErrQueueInUse},
		{"queue with one instance of a job left", func(a *applier) string {
			id := a.mustQueueJob("alice", "q", 2, 0)
			a.place(asg(id, 0, "m1"))
			a.register(id, 0, "m1", 10)
			a.term(id, 0, "m1", 0)
			return "q"
		}, fsm.ErrQueueInUse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			a.setQueue(fsm.DeclaredQueue{Name: "q", MaxSize: 5})
			name := tc.prepare(a)
			before := stateBytes(t, a.f)
			res := a.apply(fsm.RemoveQueueType, fsm.RemoveQueue{At: at(9), By: "tclark", Name: name})
			wantErr(t, res.Err, tc.wantErr)
			if tc.wantErr != nil {
				assertUnchanged(t, a.f, before)
				return
			}
			var ok bool
			a.f.Read(func(v fsm.View) { _, ok = v.Queue(name) })
			if ok || slices.Contains(queueNames(a.f), name) {
				t.Errorf("queue %s still listed after its removal: %v", name, queueNames(a.f))
			}
			if res := a.queueJob("alice", name, 1, 0); !errors.Is(res.Err, fsm.ErrNoSuchQueue) {
				t.Errorf("submit to the removed queue: got error %v, want %v", res.Err, fsm.ErrNoSuchQueue)
			}
			// It can be declared again, empty.
			a.setQueue(fsm.DeclaredQueue{Name: name})
			if got := a.queueCounts(name); got != (qc{}) {
				t.Errorf("queue declared again: got %+v, want empty", got)
			}
		})
	}
}

func TestSubmitQueueAdmission(t *testing.T) {
	t.Run("nq_maxsize", func(t *testing.T) {
		a := newApplier(t)
		a.join("m1", "x86_64", 8)
		a.setQueue(fsm.DeclaredQueue{Name: "small", MaxSize: 2})
		full := func() {
			t.Helper()
			before := stateBytes(t, a.f)
			res := a.queueJob("alice", "small", 1, 0)
			if !errors.Is(res.Err, queue.ErrQueueFull) {
				t.Fatalf("got error %v, want %v", res.Err, queue.ErrQueueFull)
			}
			want := "queue small is full: it holds 2 jobs (nq_maxsize=2); wait for some to finish or use another queue"
			if got := res.Err.Error(); got != want {
				t.Errorf("got message %q, want %q", got, want)
			}
			if res.JobID != 0 {
				t.Errorf("got JobID %d, want 0", res.JobID)
			}
			assertUnchanged(t, a.f, before)
		}
		first := a.mustQueueJob("alice", "small", 3, 0) // three instances: one job
		second := a.mustQueueJob("bob", "small", 1, 0)
		if got, want := a.queueCounts("small"), (qc{2, 4, 0}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		full()
		// The default queue and others are not affected.
		a.mustQueueJob("alice", "", 1, 0)
		// A job that finishes makes room.
		a.place(asg(second, 0, "m1"))
		a.register(second, 0, "m1", 10)
		full() // running still counts
		a.term(second, 0, "m1", 0)
		third := a.mustQueueJob("carol", "small", 1, 0)
		full()

		// So does a kill of a queued job (its instances end at once).
		a.mustOK(fsm.KillType, fsm.Kill{At: at(10), JobID: third, By: "carol"})
		fourth := a.mustQueueJob("carol", "small", 1, 0)
		full()

		// A kill of a running job frees room only when it ends.
		a.place(asg(fourth, 0, "m1"))
		a.register(fourth, 0, "m1", 11)
		a.mustOK(fsm.KillType, fsm.Kill{At: at(11), JobID: fourth, By: "carol"})
		full()
		a.apply(fsm.ChildTermType, fsm.ChildTerm{At: at(12), JobID: fourth, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: -1, Signal: "TERM"})
		a.mustQueueJob("dave", "small", 1, 0)
		full()

		// A job stays unfinished while one instance is left.
		for i := range 2 {
			a.place(asg(first, i, "m1"))
			a.register(first, i, "m1", 20+i)
			a.term(first, i, "m1", 0)
		}
		full()
		if got, want := a.queueCounts("small"), (qc{2, 2, 0}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})

	t.Run("nq_maxsize of one, message in the singular", func(t *testing.T) {
		a := newApplier(t)
		a.setQueue(fsm.DeclaredQueue{Name: "one", MaxSize: 1})
		a.mustQueueJob("alice", "one", 1, 0)
		res := a.queueJob("alice", "one", 1, 0)
		want := "queue one is full: it holds 1 job (nq_maxsize=1); wait for some to finish or use another queue"
		if !errors.Is(res.Err, queue.ErrQueueFull) || res.Err.Error() != want {
			t.Errorf("got error %v, want %q wrapping %v", res.Err, want, queue.ErrQueueFull)
		}
	})

	t.Run("idempotent retry at a full queue", func(t *testing.T) {
		a := newApplier(t)
		a.setQueue(fsm.DeclaredQueue{Name: "one", MaxSize: 1})
		s := spec("", 1)
		s.Queue = "one"
		first := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "bob", IdempotencyKey: "k", Spec: s})
		again := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(2), Owner: "bob", IdempotencyKey: "k", Spec: s})
		if again.JobID != first.JobID || !again.Existing {
			t.Errorf("got JobID %d Existing %v, want %d and true", again.JobID, again.Existing, first.JobID)
		}
	})

	t.Run("lowering nq_maxsize under held jobs", func(t *testing.T) {
		a := newApplier(t)
		a.setQueue(fsm.DeclaredQueue{Name: "q", MaxSize: 5})
		for range 3 {
			a.mustQueueJob("alice", "q", 1, 0)
		}
		a.setQueue(fsm.DeclaredQueue{Name: "q", MaxSize: 2})
		res := a.queueJob("alice", "q", 1, 0)
		want := "queue q is full: it holds 3 jobs (nq_maxsize=2); wait for some to finish or use another queue"
		if !errors.Is(res.Err, queue.ErrQueueFull) || res.Err.Error() != want {
			t.Errorf("got error %v, want %q", res.Err, want)
		}
		if got, want := a.queueCounts("q"), (qc{3, 3, 0}); got != want {
			t.Errorf("got %+v, want %+v (held jobs stay)", got, want)
		}
	})

	tests := []struct {
		name      string
		queue     string
		memMB     int64
		wantErr   error
		wantMsg   string
		wantQueue string
	}{
		{"no queue named", "", 5000, nil, "", fsm.DefaultQueue},
		{"default queue named", fsm.DefaultQueue, 0, nil, "", fsm.DefaultQueue},
		{"memory under nq_maxmem", "mem", 99, nil, "", "mem"},
		{"memory at nq_maxmem", "mem", 100, nil, "", "mem"},
		{"no memory asked", "mem", 0, nil, "", "mem"},
		{"memory over nq_maxmem", "mem", 101, queue.ErrMemoryOverLimit,
			"job asks 101 MB per instance but queue mem allows 100 MB (nq_maxmem=100); ask for memory=100 or less, or use another queue", ""},
		{"unknown queue", "nosuch", 0, fsm.ErrNoSuchQueue, "", ""},
		{"queue names are case-sensitive", "MEM", 0, fsm.ErrNoSuchQueue, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.setQueue(fsm.DeclaredQueue{Name: "mem", MaxMemMB: 100})
			before := stateBytes(t, a.f)
			res := a.queueJob("alice", tc.queue, 2, tc.memMB)
			wantErr(t, res.Err, tc.wantErr)
			if tc.wantErr != nil {
				if tc.wantMsg != "" && res.Err.Error() != tc.wantMsg {
					t.Errorf("got message %q, want %q", res.Err.Error(), tc.wantMsg)
				}
				assertUnchanged(t, a.f, before)
				if next := a.mustQueueJob("alice", "", 1, 0); next != 1 {
					t.Errorf("next job id: got %d, want 1 (a refusal uses no id)", next)
				}
				return
			}
			j := a.job(res.JobID)
			if j.Queue != tc.wantQueue || j.Spec.Queue != tc.queue {
				t.Errorf("got Queue %q Spec.Queue %q, want %q and %q", j.Queue, j.Spec.Queue, tc.wantQueue, tc.queue)
			}
			if got, want := a.queueCounts(tc.wantQueue), (qc{1, 2, 0}); got != want {
				t.Errorf("queue %s: got %+v, want %+v", tc.wantQueue, got, want)
			}
		})
	}
}

// termWith reports CHILD_TERM for an attempt, with c's exit fields.
func (a *applier) termWith(job uint64, inst int, attempt uint64, machine string, c fsm.ChildTerm) *fsm.Result {
	a.tb.Helper()
	c.At, c.JobID, c.Instance, c.Attempt, c.Machine = at(40), job, inst, attempt, machine
	return a.mustOK(fsm.ChildTermType, c)
}

// control applies a Suspend, Resume or RestartJob of a job.
func (a *applier) control(typ fsm.MessageType, job uint64) *fsm.Result {
	a.tb.Helper()
	return a.apply(typ, fsm.JobControl{At: at(30), JobID: job, By: "alice"})
}

// TestQueueCounters follows a queue's Jobs, Waiting and Active through
// submit, place, register, suspend, term, resume, restart, kill, leave and
// a limit kill, on the live FSM and on a replica restored at every step.
func TestQueueCounters(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	a.join("m2", "x86_64", 4)
	a.setQueue(fsm.DeclaredQueue{Name: "q", MaxSize: 10})
	var jobA, jobB, jobC uint64
	steps := []struct {
		name string
		do   func()
		want qc
	}{
		{"empty", func() {}, qc{}},
		{"submit three instances", func() { jobA = a.mustQueueJob("alice", "q", 3, 0) }, qc{1, 3, 0}},
		{"submit one more job", func() { jobB = a.mustQueueJob("bob", "q", 1, 0) }, qc{2, 4, 0}},
		{"a refused submit", func() { a.queueJob("bob", "nosuch", 1, 0) }, qc{2, 4, 0}},
		{"place three", func() { a.place(asg(jobA, 0, "m1"), asg(jobA, 1, "m1"), asg(jobB, 0, "m2")) }, qc{2, 1, 3}},
		{"dropped place", func() { a.place(asg(jobA, 0, "m2"), asg(jobA, 2, "ghost")) }, qc{2, 1, 3}},
		{"register", func() {
			a.register(jobA, 0, "m1", 10)
			a.register(jobA, 1, "m1", 11)
			a.register(jobB, 0, "m2", 12)
		}, qc{2, 1, 3}},
		{"suspend keeps them active", func() { a.control(fsm.SuspendType, jobA) }, qc{2, 1, 3}},
		{"a suspended instance ends", func() { a.term(jobA, 0, "m1", 0) }, qc{2, 1, 2}},
		{"resume", func() { a.control(fsm.ResumeType, jobA) }, qc{2, 1, 2}},
		{"restart queues the finished instance", func() { a.control(fsm.RestartJobType, jobA) }, qc{2, 2, 2}},
		{"the restarted attempt ends and is queued", func() {
			a.termWith(jobA, 1, 1, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "TERM"})
		}, qc{2, 3, 1}},
		{"kill of a running job", func() { a.mustOK(fsm.KillType, fsm.Kill{At: at(41), JobID: jobB, By: "bob"}) }, qc{2, 3, 1}},
		{"its end", func() { a.termWith(jobB, 0, 1, "m2", fsm.ChildTerm{ExitCode: -1, Signal: "TERM"}) }, qc{1, 3, 0}},
		{"new attempts placed", func() {
			a.mustOK(fsm.PlaceType, fsm.Place{At: at(42), Assignments: []fsm.Assignment{
				{JobID: jobA, Instance: 0, Attempt: 2, Machine: "m1", Key: fsm.AnyKey},
				{JobID: jobA, Instance: 1, Attempt: 2, Machine: "m2", Key: fsm.AnyKey},
			}})
		}, qc{1, 1, 2}},
		{"machine leaves", func() { a.leave("m2", "gone") }, qc{1, 1, 1}},
		{"a limit kill", func() {
			a.termWith(jobA, 0, 2, "m1", fsm.ChildTerm{ExitCode: -1, Signal: "KILL", Reason: "run limit of 1m0s exceeded"})
		}, qc{1, 1, 0}},
		{"kill dequeues the rest", func() { a.mustOK(fsm.KillType, fsm.Kill{At: at(43), JobID: jobA, By: "alice"}) }, qc{0, 0, 0}},
		{"a job runs to its end", func() {
			jobC = a.mustQueueJob("carol", "q", 1, 0)
			a.place(asg(jobC, 0, "m1"))
			a.register(jobC, 0, "m1", 13)
			a.term(jobC, 0, "m1", 0)
		}, qc{0, 0, 0}},
		{"restart of a finished job makes it unfinished", func() { a.control(fsm.RestartJobType, jobC) }, qc{1, 1, 0}},
	}
	for _, st := range steps {
		st.do()
		if got := a.queueCounts("q"); got != st.want {
			t.Errorf("%s: got %+v, want %+v", st.name, got, st.want)
		}
		if got := a.queueCounts(fsm.DefaultQueue); got != (qc{}) {
			t.Errorf("%s: default queue: got %+v, want empty", st.name, got)
		}
		b := &applier{tb: t, f: restored(t, snapshotBytes(t, a.f))}
		if got := b.queueCounts("q"); got != st.want {
			t.Errorf("%s: after restore: got %+v, want %+v", st.name, got, st.want)
		}
	}
}

// TestLoadDatabaseKeepsQueuesInUse: a queue holding unfinished jobs is
// never removed, whether by RemoveQueue or by a LoadDatabase whose
// declarations leave it out (or drop a queue set at run time). Either the
// load is refused or the queue stays: its jobs must stay under its limits
// and visible in View.Queues.
func TestLoadDatabaseKeepsQueuesInUse(t *testing.T) {
	tests := []struct {
		name    string
		declare func(a *applier)
	}{
		{"declared by the database", func(a *applier) {
			a.load(fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "q", MaxActive: 1}}})
		}},
		{"set at run time", func(a *applier) { a.setQueue(fsm.DeclaredQueue{Name: "q", MaxActive: 1}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			tc.declare(a)
			id := a.mustQueueJob("alice", "q", 2, 0)
			a.place(asg(id, 0, "m1"))
			res := a.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(20), By: "tclark", Database: fsm.Database{}})
			var q fsm.QueueView
			var ok bool
			a.f.Read(func(v fsm.View) { q, ok = v.Queue("q") })
			if !ok {
				t.Fatalf("LoadDatabase (Err %v) removed queue q, which holds an unfinished job", res.Err)
			}
			if q.MaxActive != 1 || slices.Index(queueNames(a.f), "q") < 0 {
				t.Errorf("got queue %+v listed in %v, want its limits kept and it listed", q, queueNames(a.f))
			}
			// Its nq_maxactive still holds.
			if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 0 {
				t.Errorf("got Accepted %v beyond the queue's nq_maxactive of 1", res.Accepted)
			}
		})
	}
}
