package stub

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// waitTimeout bounds every polling wait of these tests.
const waitTimeout = 15 * time.Second

// fakeServer stands in for the netmgr server group: it records the child
// events POSTed to it.
type fakeServer struct {
	srv *httptest.Server

	mu     sync.Mutex // guards the fields below
	status int        // answer status; 0 means 200
	stale  bool       // answer Stale: true
	// poisonJob makes a request holding an event of this job be refused
	// as a whole (400), as a server refuses a body it cannot read; 0 =
	// none.
	poisonJob uint64
	accepted  []client.ChildEvent
	received  []client.ChildEvent // every event, accepted or not
	batches   []int               // the events of each POST /v1/children
	refused   []int               // the events of each request refused as a whole
	// grantLeases makes it answer POST /v1/lease as a leader does, and
	// record each renewal in leases; otherwise that route is not found.
	// As a server does, it refuses a renewal with a field it does not
	// know (400), counting it in leaseRefused.
	grantLeases  bool
	leases       []client.LeaseRequest
	leaseRefused int
	// takesAsleep makes a granted renewal say the server takes the owner
	// verdict and the stub's own load (TakesAsleep).
	takesAsleep bool
}

func newFakeServer(t testing.TB, status int) *fakeServer {
	t.Helper()
	f := &fakeServer{status: status}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/children", func(w http.ResponseWriter, r *http.Request) {
		var batch client.ChildEventBatch
		if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.batches = append(f.batches, len(batch.Events))
		f.received = append(f.received, batch.Events...)
		var resp client.ChildEventBatchResponse
		switch {
		case f.status >= 500:
			w.WriteHeader(f.status)
			_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "no leader"})
			return
		case f.poisonJob != 0 && slices.ContainsFunc(batch.Events, func(ev client.ChildEvent) bool { return ev.JobID == f.poisonJob }):
			f.refused = append(f.refused, len(batch.Events))
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "read child events: unreadable"})
			return
		case f.status >= 400:
			// As a server does, refuse each event on its own.
			for range batch.Events {
				resp.Results = append(resp.Results, client.ChildEventResult{Error: "rejected"})
			}
			_ = json.NewEncoder(w).Encode(resp)
			return
		}
		for _, ev := range batch.Events {
			f.accepted = append(f.accepted, ev)
			resp.Results = append(resp.Results, client.ChildEventResult{Index: uint64(len(f.accepted)), Stale: f.stale})
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	mux.HandleFunc("POST /v1/lease", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.grantLeases {
			http.NotFound(w, r)
			return
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		var req client.LeaseRequest
		if err := dec.Decode(&req); err != nil {
			f.leaseRefused++
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "read lease request: " + err.Error()})
			return
		}
		f.leases = append(f.leases, req)
		_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 3000, RenewMS: 20, TakesLoad: true, TakesAsleep: f.takesAsleep})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// lastLease returns the last lease renewal received, and whether any was.
func (f *fakeServer) lastLease() (client.LeaseRequest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.leases) == 0 {
		return client.LeaseRequest{}, false
	}
	return f.leases[len(f.leases)-1], true
}

// leaseCounts returns how many renewals were granted, how many of them
// carried the stub's load, and how many were refused.
func (f *fakeServer) leaseCounts() (granted, withLoad, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, req := range f.leases {
		if req.Load != nil {
			withLoad++
		}
	}
	return len(f.leases), withLoad, f.leaseRefused
}

// addr returns the server's host:port.
func (f *fakeServer) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// events returns the accepted events of attempt k, in arrival order.
func (f *fakeServer) events(k client.AttemptRef) []client.ChildEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return eventsOf(f.accepted, k)
}

// receivedOf returns every event of attempt k received, accepted or not.
func (f *fakeServer) receivedOf(k client.AttemptRef) []client.ChildEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return eventsOf(f.received, k)
}

func eventsOf(evs []client.ChildEvent, k client.AttemptRef) []client.ChildEvent {
	var out []client.ChildEvent
	for _, ev := range evs {
		if ev.JobID == k.JobID && ev.Instance == k.Instance && ev.Attempt == k.Attempt {
			out = append(out, ev)
		}
	}
	return out
}

// waitTerm waits until the CHILD_TERM of attempt k arrived and returns the
// attempt's events.
func (f *fakeServer) waitTerm(t testing.TB, k client.AttemptRef) []client.ChildEvent {
	t.Helper()
	var evs []client.ChildEvent
	testwait.For(t, waitTimeout, "CHILD_TERM of "+k.String(), func() bool {
		evs = f.events(k)
		return len(evs) > 0 && evs[len(evs)-1].Kind == client.ChildTerm
	})
	return evs
}

// newTestStub starts a stub on 127.0.0.1 with test defaults and stops it
// at cleanup.
func newTestStub(t testing.TB, cfg Config) *Stub {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.ExecDir == "" {
		cfg.ExecDir = t.TempDir()
	}
	s, err := New(withTestDefaults(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		awaitHosts(t, s)
	})
	return s
}

// withTestDefaults fills in the name m1 and addresses on 127.0.0.1 where
// cfg has none.
func withTestDefaults(cfg Config) Config {
	if cfg.Name == "" {
		cfg.Name = "m1"
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.GossipAddr == "" {
		cfg.GossipAddr = "127.0.0.1:0"
	}
	return cfg
}

// awaitHosts waits for the supervisor hosts s started to exit, which they
// do once s is shut down and their jobs have ended, so that none writes
// into a directory the test is removing. A host whose jobs the test left
// running is left to them.
func awaitHosts(t testing.TB, s *Stub) {
	timeout := time.After(10 * time.Second)
	for _, reaped := range hostsReaped(s) {
		select {
		case <-reaped:
		case <-timeout:
			t.Logf("a supervisor host still runs jobs the test left running")
			return
		}
	}
}

// stubClient returns a client for s's API.
func stubClient(t testing.TB, s *Stub) *client.StubClient {
	t.Helper()
	c, err := client.NewStub(s.HTTPAddr())
	if err != nil {
		t.Fatalf("NewStub: %v", err)
	}
	return c
}

// shJob is a StartRequest running script with /bin/sh.
func shJob(job uint64, instance int, script string) client.StartRequest {
	return client.StartRequest{
		JobID: job, JobName: "job" + itoa(job), Instance: instance, Attempt: 1,
		Binary: "/bin/sh", Args: []string{"-c", script},
	}
}

func keyOf(req client.StartRequest) client.AttemptRef {
	return client.AttemptRef{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// startAlone sends req as a batch of one (POST /v1/starts) and returns
// its result, with the result's error or the request's.
func startAlone(ctx context.Context, c *client.StubClient, req client.StartRequest) (client.StartResult, error) {
	resp, err := c.StartBatch(ctx, client.StartBatchRequest{Starts: []client.StartRequest{req}})
	if err != nil {
		return client.StartResult{}, err
	}
	return resp.Results[0], resp.Results[0].Err()
}

// mustStart starts req, failing the test on error, and returns the
// CHILD_REGISTER the stub answered with (nil when the exec failed).
func mustStart(t *testing.T, c *client.StubClient, req client.StartRequest) *client.ChildEvent {
	t.Helper()
	res, err := startAlone(context.Background(), c, req)
	if err != nil {
		t.Fatalf("Start %s: %v", keyOf(req), err)
	}
	return res.Register
}

// mustRun starts req, whose binary must run, and returns the pid of the
// CHILD_REGISTER the stub answered with.
func mustRun(t *testing.T, c *client.StubClient, req client.StartRequest) int {
	t.Helper()
	reg := mustStart(t, c, req)
	if reg == nil || reg.Kind != client.ChildRegister || reg.PID <= 0 {
		t.Fatalf("Start %s answered REGISTER %+v, want one with a pid", keyOf(req), reg)
	}
	return reg.PID
}

// attemptDirOf is attempt k's exec dir on stub s.
func attemptDirOf(s *Stub, k client.AttemptRef) string { return s.runner.attemptDir(k) }
