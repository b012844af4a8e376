package dispatch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty/dutytest"
)

// The dispatcher's soft memory: a send is due once, not again while in
// flight or once acknowledged, again after a failure's backoff, and
// forgotten once a pass no longer finds it owed, unless it is in flight.
func TestSendStates(t *testing.T) {
	now := time.Now()
	m := make(map[fsm.AttemptRef]*sendState)
	a, b := fsm.AttemptRef{JobID: 1, Attempt: 1}, fsm.AttemptRef{JobID: 2, Attempt: 1}

	st := owe(m, a, 1)
	if !due(st, now) {
		t.Fatal("a new send is not due")
	}
	st.inflight = true
	if due(owe(m, a, 2), now) {
		t.Error("a send in flight is due again")
	}
	st.inflight, st.failures, st.retryAt = false, 1, now.Add(time.Second)
	if due(st, now) || !due(st, now.Add(2*time.Second)) {
		t.Error("a failed send must wait out its backoff, then be due")
	}
	st.acked = true
	if due(st, now.Add(time.Hour)) {
		t.Error("an acknowledged send is due again")
	}

	owe(m, b, 2).inflight = true
	forget(m, 3) // neither owed in pass 3
	if _, ok := m[a]; ok {
		t.Error("a send no longer owed was kept")
	}
	if _, ok := m[b]; !ok {
		t.Error("a send in flight was forgotten")
	}
}

// fakeStub stands in for a stub's API: it records the Starts it receives
// and takes each, unless it names a refused job (answered 400).
type fakeStub struct {
	srv *httptest.Server

	mu      sync.Mutex // guards the fields below
	refuse  uint64     // refuse the Starts of this job; 0 = none
	batches []int      // the size of every POST /v1/starts, answered or not
	// registers answers each Start with a CHILD_REGISTER, pid
	// 100+instance.
	registers bool
	// wrongAttempt makes those REGISTERs name the next attempt.
	wrongAttempt bool
	// hold, when set, keeps each request until a value is received from
	// it; inflight counts the requests held, most the largest count.
	hold           chan struct{}
	inflight, most int
}

func newFakeStub(t *testing.T, refuse uint64) *fakeStub {
	t.Helper()
	f := &fakeStub{refuse: refuse}
	answer := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/starts", func(w http.ResponseWriter, r *http.Request) {
		var batch client.StartBatchRequest
		if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
			answer(w, http.StatusBadRequest, client.ErrorResponse{Error: err.Error()})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.hold != nil {
			f.inflight++
			f.most = max(f.most, f.inflight)
			f.mu.Unlock()
			<-f.hold
			f.mu.Lock()
			f.inflight--
		}
		f.batches = append(f.batches, len(batch.Starts))
		var resp client.StartBatchResponse
		for _, req := range batch.Starts {
			res := client.StartResult{Status: http.StatusOK, Started: true}
			switch {
			case req.JobID == f.refuse:
				res = client.StartResult{Status: http.StatusBadRequest, Error: "refused"}
			case f.registers:
				res.Register = &client.ChildEvent{Kind: client.ChildRegister, JobID: req.JobID, Instance: req.Instance,
					Attempt: req.Attempt, Machine: "m1", PID: 100 + req.Instance, At: time.Now().UTC()}
				if f.wrongAttempt {
					res.Register.Attempt++
				}
			}
			resp.Results = append(resp.Results, res)
		}
		answer(w, http.StatusOK, resp)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// counts returns the sizes of the batches received so far, smallest
// first (concurrent requests arrive in any order).
func (f *fakeStub) counts() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	batches := slices.Clone(f.batches)
	slices.Sort(batches)
	return batches
}

// dispatchPool is a database with one machine, m1, whose stub is a
// fakeStub, and a dispatcher whose handle is that database's.
type dispatchPool struct {
	t       *testing.T
	h       *dutytest.Handle
	d       *Dispatcher
	metrics Metrics
	cpus    int // m1's CPUs (1000 unless an option sets it)
}

func newDispatchPool(t *testing.T, stub *fakeStub, opts ...func(*dispatchPool)) *dispatchPool {
	t.Helper()
	p := &dispatchPool{t: t, h: dutytest.New(), cpus: 1000, metrics: Metrics{
		StartRequests: promtext.NewCounter("start_requests", "help"),
		StartsFailed:  promtext.NewCounter("starts_failed", "help"),
		StartLatency:  promtext.NewHistogram("start_latency", "help", []float64{1}),
		SignalsSent:   promtext.NewCounter("signals_sent", "help"),
	}}
	for _, o := range opts {
		o(p)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	p.d = New(p.h, Config{
		StubClient: func(_, addr string) (*client.StubClient, error) {
			return client.NewStub(addr, client.WithHTTPClient(hc))
		},
		CommitChildren: p.commitChildren,
		Servers:        func() []string { return nil },
		Metrics:        p.metrics,
	})
	addr := strings.TrimPrefix(stub.srv.URL, "http://")
	p.apply(fsm.StubJoinType, fsm.StubJoin{At: time.Now(), Machine: fsm.MachineFacts{
		Name: "m1", Arch: "x86_64", CPUs: p.cpus, MemoryMB: 4096, Addr: addr,
	}})
	return p
}

// withRaft makes the pool's database the state machine of a one-server
// Raft group in memory, which its server leads: the dispatcher's own
// commits (REGISTERs from Start answers) then work, and the pool's go
// through Raft too. Call it before anything is applied.
func (p *dispatchPool) withRaft() { p.h.WithRaft(p.t) }

// commitChildren commits the REGISTERs of Start answers as one
// ChildEvents entry, as the server's commit path does.
func (p *dispatchPool) commitChildren(evs []client.ChildEvent) ([]*fsm.Result, []error, error) {
	c := fsm.ChildEvents{Events: make([]fsm.ChildEvent, len(evs))}
	for i, ev := range evs {
		c.Events[i] = fsm.ChildEvent{Register: &fsm.ChildRegister{At: ev.At, JobID: ev.JobID, Instance: ev.Instance,
			Attempt: ev.Attempt, Machine: ev.Machine, PID: ev.PID}}
	}
	res, err := p.h.Apply(fsm.ChildEventsType, c)
	if err != nil {
		return nil, make([]error, len(evs)), err
	}
	results := make([]*fsm.Result, len(evs))
	for i := range results {
		results[i] = res
	}
	return results, make([]error, len(evs)), nil
}

func (p *dispatchPool) apply(typ fsm.MessageType, body any) *fsm.Result {
	p.t.Helper()
	return p.h.MustApply(p.t, typ, body)
}

// place submits a job of n instances and places them all on m1; it
// returns the job's id.
func (p *dispatchPool) place(n int) uint64 {
	p.t.Helper()
	at := time.Now()
	job := p.apply(fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: fsm.JobSpec{
		Name: "j", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: n,
	}}).JobID
	var as []fsm.Assignment
	for i := range n {
		as = append(as, fsm.Assignment{JobID: job, Instance: i, Attempt: 1, Machine: "m1", Key: fsm.AnyKey})
	}
	if res := p.apply(fsm.PlaceType, fsm.Place{At: at, PlannedAtIndex: p.h.Index(), Assignments: as}); len(res.Accepted) != n {
		p.t.Fatalf("Place accepted %d of %d assignments", len(res.Accepted), n)
	}
	return job
}

// pass runs one dispatch pass and waits for its sends.
func (p *dispatchPool) pass() {
	p.d.Dispatch(context.Background())
	p.d.Wait()
}

// states counts the Start send states acknowledged, and those failed
// once and not acknowledged.
func (p *dispatchPool) states() (acked, failed int) {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	for _, st := range p.d.starts {
		switch {
		case st.inflight:
			p.t.Errorf("a send is still in flight after wait")
		case st.acked:
			acked++
		case st.failures == 1:
			failed++
		}
	}
	return acked, failed
}

// The dispatcher sends a stub its Starts of a pass in batches of at most
// startBatchMax and settles each Start from its own result.
func TestDispatchStartBatches(t *testing.T) {
	tests := []struct {
		name        string
		refuse      bool // the stub refuses the first job's Starts
		down        bool // the stub does not answer
		jobs        []int
		wantBatches []int
		wantAcked   int
		wantFailed  int
	}{
		{name: "one batch", jobs: []int{2, 1}, wantBatches: []int{3}, wantAcked: 3},
		{name: "capped", jobs: []int{startBatchMax + 44}, wantBatches: []int{44, startBatchMax}, wantAcked: startBatchMax + 44},
		{name: "refused start", refuse: true, jobs: []int{1, 2}, wantBatches: []int{3}, wantAcked: 2, wantFailed: 1},
		{name: "stub down", down: true, jobs: []int{2, 1}, wantFailed: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var refuse uint64
			if tt.refuse {
				refuse = 1 // job ids count from 1
			}
			stub := newFakeStub(t, refuse)
			p := newDispatchPool(t, stub)
			for _, n := range tt.jobs {
				p.place(n)
			}
			if tt.down {
				stub.srv.Close()
			}
			p.pass()
			if got := stub.counts(); !slices.Equal(got, tt.wantBatches) {
				t.Errorf("got batches %v, want %v", got, tt.wantBatches)
			}
			if acked, failed := p.states(); acked != tt.wantAcked || failed != tt.wantFailed {
				t.Errorf("got %d starts acknowledged and %d failed, want %d and %d", acked, failed, tt.wantAcked, tt.wantFailed)
			}
			if got := p.metrics.StartsFailed.Value(); got != float64(tt.wantFailed) {
				t.Errorf("starts failed metric = %v, want %d", got, tt.wantFailed)
			}
		})
	}
}

// The dispatcher commits the REGISTERs of the Start answers:
// the instances run, with the answered pids, and owe no Start any more. A
// Start whose REGISTER is not committed (the answer names another
// attempt, or Raft cannot commit) counts as failed and goes again.
func TestDispatchCommitsAnsweredRegisters(t *testing.T) {
	tests := []struct {
		name         string
		wrongAttempt bool // the stub's first answers name the next attempt
		raftDown     bool // Raft is shut down before the pass
	}{
		{name: "committed"},
		{name: "wrong attempt answered", wrongAttempt: true},
		{name: "raft down", raftDown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stub := newFakeStub(t, 0)
			stub.registers, stub.wrongAttempt = true, tt.wrongAttempt
			p := newDispatchPool(t, stub, (*dispatchPool).withRaft)
			job := p.place(3)
			if tt.raftDown {
				if err := p.h.Raft().Shutdown().Error(); err != nil {
					t.Fatalf("shut down raft: %v", err)
				}
			}
			p.pass()
			if tt.wrongAttempt || tt.raftDown {
				if acked, failed := p.states(); acked != 0 || failed != 3 {
					t.Fatalf("got %d starts acknowledged and %d failed, want 0 and 3", acked, failed)
				}
				p.expectInstances(job, 3, fsm.InstancePlaced)
				if tt.raftDown {
					return
				}
				stub.mu.Lock()
				stub.wrongAttempt = false
				stub.mu.Unlock()
				p.retryNow()
				p.pass()
			}
			if acked, failed := p.states(); acked != 3 || failed != 0 {
				t.Errorf("got %d starts acknowledged and %d failed, want 3 and 0", acked, failed)
			}
			p.expectInstances(job, 3, fsm.InstanceRunning)
		})
	}
}

// expectInstances checks that the n instances of job are in state, and
// when running, with the pid a fakeStub answers.
func (p *dispatchPool) expectInstances(job uint64, n int, state string) {
	p.t.Helper()
	p.h.Read(func(v fsm.View) {
		for i := range n {
			_, in, ok := v.Instance(fsm.InstanceRef{JobID: job, Instance: i})
			switch {
			case !ok:
				p.t.Errorf("instance %d of job %d not found", i, job)
			case in.State != state:
				p.t.Errorf("instance %d is %s, want %s", i, in.State, state)
			case state == fsm.InstanceRunning && (in.PID != 100+i || in.StartedAt.IsZero()):
				p.t.Errorf("instance %d runs with pid %d since %v, want pid %d and a start time", i, in.PID, in.StartedAt, 100+i)
			}
		}
	})
}

// retryNow ends the backoff of every failed send.
func (p *dispatchPool) retryNow() {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	for _, st := range p.d.starts {
		st.retryAt = time.Time{}
	}
}

// A pass walks the active instances only when the database owes a new
// send or one of the dispatcher's sends awaits a retry: after a pass that
// settled everything, passes on CHILD events alone do not walk; a refused
// Start keeps passes walking until it is sent again; a kill makes one
// walk and its signal goes out.
func TestDispatchWalksOnlyWhenSomethingIsOwed(t *testing.T) {
	stub := newFakeStub(t, 0)
	p := newDispatchPool(t, stub)
	job := p.place(2)
	p.pass()
	walks := func() uint64 {
		p.d.mu.Lock()
		defer p.d.mu.Unlock()
		return p.d.pass
	}
	after := walks()
	p.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: time.Now(), JobID: job, Instance: 0, Attempt: 1, Machine: "m1", PID: 100})
	p.pass()
	if got := walks(); got != after {
		t.Errorf("a CHILD_REGISTER made %d walks, want none", got-after)
	}

	// A refused Start: the next passes walk until it is due and sent.
	stub.mu.Lock()
	stub.refuse = 2 // the next job's id
	stub.mu.Unlock()
	refused := p.place(1)
	if refused != 2 {
		t.Fatalf("job id %d, want 2", refused)
	}
	p.pass()
	if _, failed := p.states(); failed != 1 {
		t.Fatalf("got %d failed starts, want the refused one", failed)
	}
	before := walks()
	p.pass()
	if got := walks(); got != before+1 {
		t.Errorf("a pass with a retry pending made %d walks, want 1", got-before)
	}
	stub.mu.Lock()
	stub.refuse = 0
	stub.mu.Unlock()
	p.d.mu.Lock()
	for _, st := range p.d.starts {
		st.retryAt = time.Time{} // its backoff is over
	}
	p.d.mu.Unlock()
	p.pass()
	// Job 1's instance 0 runs, so its Start is forgotten.
	if acked, failed := p.states(); acked != 2 || failed != 0 {
		t.Fatalf("got %d acknowledged and %d failed, want 2 and 0", acked, failed)
	}
	p.pass() // settles the retry flag: nothing failed
	settled := walks()
	p.pass()
	if got := walks(); got != settled {
		t.Errorf("passes kept walking after the retry was sent: %d walks", got-settled)
	}

	// A kill owes signals: one walk sends them.
	p.apply(fsm.KillType, fsm.Kill{At: time.Now(), JobID: job, By: "alice", Signal: "TERM"})
	p.pass()
	if got := walks(); got != settled+1 {
		t.Errorf("a kill made %d walks, want 1", got-settled)
	}
	p.d.mu.Lock()
	signals := len(p.d.signals)
	p.d.mu.Unlock()
	if signals != 1 {
		t.Errorf("got %d signal sends, want 1 (job %d's running instance)", signals, job)
	}

	// The placed instance, killed before it started, is owed its signal
	// once it registers: that commit makes a walk.
	p.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: time.Now(), JobID: job, Instance: 1, Attempt: 1, Machine: "m1", PID: 101})
	p.pass()
	p.d.mu.Lock()
	signals = len(p.d.signals)
	p.d.mu.Unlock()
	if signals != 2 {
		t.Errorf("after the placed instance registered: got %d signal sends, want 2", signals)
	}
}
