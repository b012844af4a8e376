package server

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// An entry takes the queued calls in order while their events fit in
// childEntryMax; a larger call goes alone.
func TestChildCommitterTakes(t *testing.T) {
	var c childCommitter
	for _, n := range []int{1000, 20, 10, 2000, 1} {
		c.queue = append(c.queue, &childCall{batch: make([]fsm.ChildEvent, n)})
	}
	var got [][]int
	for len(c.queue) > 0 {
		var sizes []int
		for _, call := range c.takeLocked() {
			sizes = append(sizes, len(call.batch))
		}
		got = append(got, sizes)
	}
	want := [][]int{{1000, 20}, {10}, {2000}, {1}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("entries took calls of %v events, want %v", got, want)
	}
}

// Concurrent callers each get the results of their own events, in their
// order, however their calls were merged into entries: a caller whose
// second event names no job gets it answered stale, and its REGISTER
// makes its instance run.
func TestChildCommitterConcurrent(t *testing.T) {
	const callers = 40
	p := newDispatchPool(t, newFakeStub(t, false, 0), (*dispatchPool).withRaft)
	job := p.place(callers)
	s := p.d.s
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
			results[i], errs[i] = s.children.commit(s, batch)
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
	p.f.Read(func(v fsm.View) {
		for i := range callers {
			if _, in, ok := v.Instance(fsm.InstanceRef{JobID: job, Instance: i}); !ok || in.State != fsm.InstanceRunning || in.PID != 1000+i {
				t.Errorf("instance %d = %+v, want running with pid %d", i, in, 1000+i)
			}
		}
	})
	if entries := s.raft.LastIndex() - first; entries == 0 || entries > callers {
		t.Errorf("%d callers took %d entries, want 1 to %d", callers, entries, callers)
	}
	t.Logf("%d callers took %d entries", callers, s.raft.LastIndex()-first)
}
