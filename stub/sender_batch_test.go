package stub

import (
	"testing"
)

// Events go to the servers in batches; a server that takes no batches
// (404, an older version) gets them one by one, and nothing is lost.
func TestSenderBatchesAndFallsBack(t *testing.T) {
	for _, older := range []bool{false, true} {
		name := "batches"
		if older {
			name = "older server"
		}
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, 0)
			srv.mu.Lock()
			srv.noBatch = older
			srv.mu.Unlock()
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
			if srv.batches == 0 {
				t.Errorf("no POST /v1/children was tried")
			}
			if older && len(srv.accepted) != 10 {
				t.Errorf("older server accepted %d events one by one, want 10", len(srv.accepted))
			}
		})
	}
}
