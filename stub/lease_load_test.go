package stub

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// leaseServer answers POST /v1/lease as a server does, refusing unknown
// fields, and takes the load.
type leaseServer struct {
	mu       sync.Mutex // guards the fields below
	withLoad int        // renewals granted that carried a load
	refused  int        // renewals refused for an unknown field
}

func (l *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req client.LeaseRequest
	if err := dec.Decode(&req); err != nil {
		l.refused++
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "read lease request: " + err.Error()})
		return
	}
	if req.Load != nil {
		l.withLoad++
	}
	_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 2000, RenewMS: 20, TakesLoad: true})
}

func (l *leaseServer) counts() (withLoad, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.withLoad, l.refused
}

// A stub sends its load with lease renewals once the server says it takes
// it, and stops gossiping load changes.
func TestLoadRidesOnRenewals(t *testing.T) {
	ls := &leaseServer{}
	srv := httptest.NewServer(ls)
	t.Cleanup(srv.Close)
	s := newTestStub(t, Config{Servers: []string{strings.TrimPrefix(srv.URL, "http://")}})

	testwait.For(t, waitTimeout, "a renewal carrying the load", func() bool {
		withLoad, _ := ls.counts()
		return withLoad > 0
	})
	if !s.lease.loadByLease.Load() {
		t.Errorf("the server takes the load, but the stub still gossips it")
	}
	if _, refused := ls.counts(); refused != 0 {
		t.Errorf("got %d refused renewals, want none", refused)
	}
}

// asleepServer answers renewals, saying it takes the owner verdict when
// takes is set, and keeps the last request.
type asleepServer struct {
	takes bool
	mu    sync.Mutex // guards last and n
	last  client.LeaseRequest
	n     int
}

func (a *asleepServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req client.LeaseRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.last, a.n = req, a.n+1
	a.mu.Unlock()
	_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 2000, RenewMS: 20, TakesLoad: true, TakesAsleep: a.takes})
}

func (a *asleepServer) lastRequest() (client.LeaseRequest, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last, a.n
}

// A stub reports its owner verdict and its own jobs' load only to servers
// that say they take them: an older server refuses unknown fields.
func TestAsleepRidesOnRenewalsOnlyWhenTaken(t *testing.T) {
	for _, takes := range []bool{false, true} {
		as := &asleepServer{takes: takes}
		srv := httptest.NewServer(as)
		t.Cleanup(srv.Close)
		newTestStub(t, Config{Servers: []string{strings.TrimPrefix(srv.URL, "http://")}})
		testwait.For(t, waitTimeout, "renewals", func() bool { _, n := as.lastRequest(); return n > 5 })
		req, _ := as.lastRequest()
		if got := req.Asleep != nil && req.OwnLoad != nil; got != takes {
			t.Errorf("server takes it %v: got Asleep %v OwnLoad %v", takes, req.Asleep, req.OwnLoad)
		}
		if takes && *req.Asleep != "" {
			t.Errorf("a stub without an owner policy says asleep %q", *req.Asleep)
		}
	}
}
