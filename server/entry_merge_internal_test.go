package server

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty/dutytest"
)

// raftServer is a Server holding just its database, the state machine of
// a one-server Raft group in memory that it leads, for the commit paths'
// tests.
func raftServer(t *testing.T) *Server {
	t.Helper()
	h := dutytest.New().WithRaft(t)
	s := &Server{log: slog.New(slog.DiscardHandler), fsm: h.FSM, raft: h.Raft(), cfg: Config{ApplyTimeout: 10 * time.Second}}
	s.metrics = newMetrics(s)
	// Raft's own first entries (the configuration, the new leader's
	// no-op) are in the log before the tests count entries from
	// LastIndex: a clean-clone CI run once counted the no-op as a fourth
	// Submits entry.
	if err := s.raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	return s
}

// placeOnM1 joins machine m1 and places the n instances of a new job
// there; it returns the job's id.
func placeOnM1(t *testing.T, s *Server, n int) uint64 {
	t.Helper()
	at := time.Now().UTC()
	apply := func(typ fsm.MessageType, body any) *fsm.Result {
		t.Helper()
		res, err := s.apply(typ, body)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("apply %v: %v", typ, err)
		}
		return res
	}
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "m1", Arch: "x86_64", CPUs: 1000, MemoryMB: 4096, Addr: "127.0.0.1:1"}})
	job := apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: fsm.JobSpec{
		Name: "j", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: n,
	}}).JobID
	var as []fsm.Assignment
	for i := range n {
		as = append(as, fsm.Assignment{JobID: job, Instance: i, Attempt: 1, Machine: "m1", Key: fsm.AnyKey})
	}
	if res := apply(fsm.PlaceType, fsm.Place{At: at, PlannedAtIndex: s.raft.AppliedIndex(), Assignments: as}); len(res.Accepted) != n {
		t.Fatalf("Place accepted %d of %d assignments", len(res.Accepted), n)
	}
	return job
}

// An entry takes the queued calls in order while their items fit in
// entryMaxItems; a larger call goes alone.
func TestEntryMergerTakes(t *testing.T) {
	var m entryMerger[int]
	for _, n := range []int{1000, 20, 10, 2000, 1} {
		m.queue = append(m.queue, &mergeCall[int]{items: make([]int, n)})
	}
	var got [][]int
	for len(m.queue) > 0 {
		var sizes []int
		for _, call := range m.takeLocked() {
			sizes = append(sizes, len(call.items))
		}
		got = append(got, sizes)
	}
	want := [][]int{{1000, 20}, {10}, {2000}, {1}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("entries took calls of %v items, want %v", got, want)
	}
}

// Concurrent callers each get the results of their own CHILD events, in
// their order, however their calls were merged into entries: a caller
// whose second event names no job gets it answered stale, and its REGISTER
// makes its instance run.
func TestChildEventsShareEntries(t *testing.T) {
	const callers = 40
	s := raftServer(t)
	job := placeOnM1(t, s, callers)
	first := s.raft.LastIndex()
	results := make([][]*fsm.Result, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			batch := []fsm.ChildEvent{{Register: &fsm.ChildRegister{
				At: time.Now().UTC(), JobID: job, Instance: i, Attempt: 1, Machine: "m1", PID: 1000 + i,
			}}}
			if i%2 == 1 {
				batch = append(batch, fsm.ChildEvent{Register: &fsm.ChildRegister{
					At: time.Now().UTC(), JobID: job + 1000, Instance: i, Attempt: 1, Machine: "m1", PID: 1,
				}})
			}
			results[i], errs[i] = s.children.commit(batch, s.proposeChildEvents)
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		want := 1 + i%2
		if len(results[i]) != want {
			t.Fatalf("caller %d got %d results, want %d", i, len(results[i]), want)
		}
		if r := results[i][0]; r.Stale || r.JobID != job {
			t.Errorf("caller %d: REGISTER of job %d answered %+v, want accepted", i, job, r)
		}
		if want == 2 && !results[i][1].Stale {
			t.Errorf("caller %d: event of an unknown job answered %+v, want stale", i, results[i][1])
		}
	}
	s.fsm.Read(func(v fsm.View) {
		for i := range callers {
			if _, in, ok := v.Instance(fsm.InstanceRef{JobID: job, Instance: i}); !ok || in.State != fsm.InstanceRunning || in.PID != 1000+i {
				t.Errorf("instance %d = %+v, want running with pid %d", i, in, 1000+i)
			}
		}
	})
	if entries := s.raft.LastIndex() - first; entries == 0 || entries > callers {
		t.Errorf("%d callers took %d entries, want 1 to %d", callers, entries, callers)
	}
}

// Concurrent submitters each get their own job, however their Submits
// were merged into entries; two with the same idempotency key get the
// same job, and a refused one its error.
func TestSubmitsShareEntries(t *testing.T) {
	const callers = 40
	s := raftServer(t)
	first := s.raft.LastIndex()
	results := make([]*fsm.Result, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			spec := fsm.JobSpec{Name: "j", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}}
			key := ""
			switch {
			case i < 2:
				key = "same" // callers 0 and 1 share a key
			case i == 2:
				spec.Binaries = nil // refused
			}
			res, err := s.applySubmit(command{fsm.SubmitType, fsm.Submit{At: time.Now().UTC(), Owner: "u", IdempotencyKey: key, Spec: spec}})
			if err != nil {
				t.Errorf("submitter %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if results[0].JobID != results[1].JobID || results[0].JobID == 0 {
		t.Errorf("submitters with one key got jobs %d and %d, want the same", results[0].JobID, results[1].JobID)
	}
	if results[2].Err == nil {
		t.Errorf("a spec without binaries was accepted as job %d", results[2].JobID)
	}
	jobs := map[uint64]bool{results[0].JobID: true}
	for i := 3; i < callers; i++ {
		if results[i].Err != nil || results[i].JobID == 0 || jobs[results[i].JobID] {
			t.Errorf("submitter %d got %+v, want a job of its own", i, results[i])
		}
		jobs[results[i].JobID] = true
	}
	s.fsm.Read(func(v fsm.View) {
		if n := len(v.Jobs()); n != callers-2 {
			t.Errorf("database holds %d jobs, want %d", n, callers-2)
		}
	})
	entries := s.raft.LastIndex() - first
	if entries == 0 || entries > callers {
		t.Errorf("%d submitters took %d entries, want 1 to %d", callers, entries, callers)
	}
	if got := s.metrics.commitSeconds.WithLabelValues(fsm.SubmitsType.String()).Count(); got != entries {
		t.Errorf("%d Submits entries committed, want all %d entries", got, entries)
	}
}
