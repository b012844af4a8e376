package stub

import (
	"net/http"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/internal/testwait"
)

// Events go to the servers in batches, and each arrives once.
func TestSenderBatches(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	reqs := []int{1, 2, 3, 4, 5}
	for _, j := range reqs {
		mustStart(t, c, shJob(uint64(j), 0, "exit 0"))
	}
	for _, j := range reqs {
		evs := srv.waitTerm(t, keyOf(shJob(uint64(j), 0, "")))
		if len(evs) != 2 {
			t.Errorf("job %d: events %+v, want REGISTER and TERM once each", j, evs)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.batches) == 0 {
		t.Errorf("no POST /v1/children was sent")
	}
}

// A batch the server refuses as a whole (400: an event it cannot read)
// goes again one event per request: only that event is dropped, and every
// other attempt's events arrive.
func TestSenderIsolatesARefusedEvent(t *testing.T) {
	const poison = 3
	srv := newFakeServer(t, http.StatusServiceUnavailable)
	srv.mu.Lock()
	srv.poisonJob = poison
	srv.mu.Unlock()
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	jobs := []uint64{1, 2, 3, 4, 5}
	for _, j := range jobs {
		mustStart(t, c, shJob(j, 0, "exit 0"))
	}
	// While no server commits, the events wait in the outbox until one
	// request carries them all.
	testwait.For(t, waitTimeout, "one request with every attempt's events", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return slices.Contains(srv.batches, 2*len(jobs))
	})
	srv.mu.Lock()
	srv.status = 0
	srv.mu.Unlock()

	for _, j := range jobs {
		if j == poison {
			continue
		}
		if evs := srv.waitTerm(t, keyOf(shJob(j, 0, ""))); len(evs) != 2 {
			t.Errorf("job %d: events %+v, want REGISTER and TERM once each", j, evs)
		}
	}
	testwait.For(t, waitTimeout, "an empty outbox", func() bool {
		n, err := s.out.Backlog()
		return err == nil && n == 0
	})
	if evs := srv.events(keyOf(shJob(poison, 0, ""))); len(evs) != 0 {
		t.Errorf("job %d: accepted %+v, want its events dropped", poison, evs)
	}
	// Refused: the batch, then the poisoned attempt's REGISTER and TERM,
	// each on its own.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if want := []int{2 * len(jobs), 1, 1}; !slices.Equal(srv.refused, want) {
		t.Errorf("got requests of %v events refused, want %v", srv.refused, want)
	}
}
