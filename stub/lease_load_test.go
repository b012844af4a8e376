package stub

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// leaseServer answers POST /v1/lease as a server does, refusing unknown
// fields; as an older server (old) it knows no load and does not take it.
type leaseServer struct {
	mu       sync.Mutex // guards the fields below
	old      bool
	withLoad int // renewals granted that carried a load
	without  int // renewals granted without one
	refused  int // renewals refused for an unknown field
}

func (l *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req client.LeaseRequest
	var err error
	if l.old {
		var oldReq struct {
			Machine string              `json:"machine"`
			Running []client.AttemptRef `json:"running"`
		}
		err = dec.Decode(&oldReq)
	} else {
		err = dec.Decode(&req)
	}
	if err != nil {
		l.refused++
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "read lease request: " + err.Error()})
		return
	}
	if req.Load != nil {
		l.withLoad++
	} else {
		l.without++
	}
	_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 2000, RenewMS: 20, TakesLoad: !l.old})
}

func (l *leaseServer) counts() (withLoad, without, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.withLoad, l.without, l.refused
}

// A stub sends its load with lease renewals once the server says it takes
// it, and stops gossiping load changes; when a server refuses the field
// (an older leader during an upgrade) it renews without it at once and
// gossips its load again.
func TestLoadRidesOnRenewals(t *testing.T) {
	ls := &leaseServer{}
	srv := httptest.NewServer(ls)
	t.Cleanup(srv.Close)
	s := newTestStub(t, Config{Servers: []string{strings.TrimPrefix(srv.URL, "http://")}})

	waitFor(t, "a renewal carrying the load", func() bool {
		withLoad, _, _ := ls.counts()
		return withLoad > 0
	})
	if !s.lease.loadByLease.Load() {
		t.Errorf("the server takes the load, but the stub still gossips it")
	}

	ls.mu.Lock()
	ls.old = true
	before := ls.without
	ls.mu.Unlock()
	waitFor(t, "renewals without the load from an older server", func() bool {
		_, without, refused := ls.counts()
		return refused > 0 && without > before+1
	})
	if _, _, refused := ls.counts(); refused != 1 {
		t.Errorf("got %d refused renewals, want 1: the stub must stop sending the load", refused)
	}
	if s.lease.loadByLease.Load() {
		t.Errorf("an older server does not take the load, but the stub does not gossip it")
	}
	if !s.lease.valid() {
		t.Errorf("the lease lapsed across the older server's refusal")
	}
}
