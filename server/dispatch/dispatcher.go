package dispatch

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty"
	"github.com/netmgr/netmgr/server/planner"
)

const (
	// startBatchMax bounds the Starts of one POST /v1/starts; a stub owed
	// more in one pass gets several requests.
	startBatchMax = 256
	// sendTimeout bounds one request to a stub, from when it has a slot.
	sendTimeout = 5 * time.Second
	// sendSlots bounds the requests to stubs in flight at once. A pass
	// that owes a thousand stubs (a job of a thousand instances, one a
	// machine) otherwise dials a thousand TLS connections at once, and
	// the handshakes' goroutines crowd Raft's heartbeats out of the
	// leader's CPU: at 1,000 simulated machines on 2 cores the leader
	// missed its quorum lease and stepped down, and every lease in the
	// pool ran out (issue 36).
	sendSlots = 32
)

// sendState is the leader's soft memory of one Start or Signal.
type sendState struct {
	inflight bool
	acked    bool
	failures int
	retryAt  time.Time
	pass     uint64 // the last pass that found it owed
}

// Config is what a Dispatcher is given besides its handle.
type Config struct {
	// StubClient returns a client for the stub of machine at addr.
	StubClient func(machine, addr string) (*client.StubClient, error)
	// CommitChildren commits the CHILD events of a stub's answer to a
	// batch of Starts, as POST /v1/children would: the results, the
	// events refused before any commit (by index), or err when the
	// commit failed.
	CommitChildren func(evs []client.ChildEvent) (results []*fsm.Result, refused []error, err error)
	// Servers lists the servers' API addresses, which each Start
	// carries for its stub.
	Servers func() []string
	// MaxCopySize is the limit on a job's copy_out archive that a Start
	// of a job with copy_out carries.
	MaxCopySize int64
	// Metrics are the instruments the sends feed.
	Metrics Metrics
}

// Metrics are the dispatcher's instruments.
type Metrics struct {
	// StartRequests counts the requests carrying Starts sent to stubs.
	StartRequests *promtext.Counter
	// StartsFailed counts the Starts that failed and will be retried.
	StartsFailed *promtext.Counter
	// StartLatency observes the time from a placement to the stub's
	// acknowledgement of its Start.
	StartLatency *promtext.Histogram
	// SignalsSent counts the Signals a stub acknowledged.
	SignalsSent *promtext.Counter
}

// started records a stub's answer to the Start of an attempt placed at
// placedAt.
func (m Metrics) started(placedAt time.Time, err error) {
	switch {
	case err != nil:
		m.StartsFailed.Inc()
	case !placedAt.IsZero():
		m.StartLatency.Observe(time.Since(placedAt).Seconds())
	}
}

// signalled records a stub's answer to a Signal, and returns err.
func (m Metrics) signalled(err error) error {
	if err == nil {
		m.SignalsSent.Inc()
	}
	return err
}

// Dispatcher sends Starts for placed attempts and kill Signals for attempts
// of killed jobs, level-triggered from the database: every pass sends what
// the database says is owed and not yet acknowledged, so a new leader
// simply re-sends (stubs ignore repeats). The Starts a pass owes one stub
// go in one request (POST /v1/starts); each Signal goes on its own. Sends
// never block the pass. It is one leader term's; only the leader loop
// calls Dispatch.
type Dispatcher struct {
	h     duty.Handle
	cfg   Config
	done  chan struct{} // a send finished; the leader loop runs another pass
	slots chan struct{} // a token per request to a stub in flight (sendSlots)
	wg    sync.WaitGroup

	mu      sync.Mutex // guards starts, signals, pass, walked, owedSends and retry
	starts  map[fsm.AttemptRef]*sendState
	signals map[signalKey]*sendState
	pass    uint64 // counts passes, to forget what is no longer owed
	// walked, owedSends and retry decide whether a pass must walk the
	// active instances: not when the database's OwedSends is the one the
	// last walk saw and no send of this dispatcher awaits a retry. Most
	// commits under load are CHILD events, which make nothing owed.
	walked    bool
	owedSends uint64
	retry     bool
}

// signalKey names one signal decision for an attempt: a kill, a restart,
// or the suspend or resume committed at index.
type signalKey struct {
	fsm.AttemptRef
	what  string
	index uint64
}

// New returns a leader term's dispatcher.
func New(h duty.Handle, cfg Config) *Dispatcher {
	return &Dispatcher{
		h:       h,
		cfg:     cfg,
		done:    make(chan struct{}, 1),
		slots:   make(chan struct{}, sendSlots),
		starts:  make(map[fsm.AttemptRef]*sendState),
		signals: make(map[signalKey]*sendState),
	}
}

// Wait blocks until every send this dispatcher started has returned.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// Done receives when a send finished: the leader loop then runs another
// pass.
func (d *Dispatcher) Done() <-chan struct{} { return d.done }

type startWork struct {
	st       *sendState
	machine  string
	addr     string
	req      client.StartRequest
	placedAt time.Time
}

type signalWork struct {
	st      *sendState
	machine string
	addr    string
	req     client.SignalRequest
}

// Dispatch starts the sends the database owes. It runs after every
// commit, so it walks the active instances without sorting them and
// builds a request only for a send that is due: most active instances run
// and are owed nothing, and most owed sends are in flight or acknowledged.
func (d *Dispatcher) Dispatch(ctx context.Context) {
	servers := d.cfg.Servers()
	var (
		starts  []startWork
		signals []signalWork
	)
	now := time.Now()
	// d.mu, then the database's read lock: the send goroutines take d.mu
	// alone, so the order cannot deadlock.
	d.mu.Lock()
	defer d.mu.Unlock()
	walk := false
	d.h.Read(func(v fsm.View) {
		if d.walked && !d.retry && v.OwedSends() == d.owedSends {
			return // nothing new is owed, and nothing waits for a retry
		}
		walk, d.walked, d.retry, d.owedSends = true, true, false, v.OwedSends()
		d.pass++
		v.EachActive(func(ref fsm.InstanceRef, machine string) bool {
			j, in, _ := v.Instance(ref)
			key := fsm.AttemptRef{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt}
			if in.State == fsm.InstancePlaced {
				st := owe(d.starts, key, d.pass)
				d.retry = d.retry || awaitsRetry(st)
				if m, ok := v.Machine(machine); ok && due(st, now) {
					q, _ := v.Queue(j.Queue)
					st.inflight = true
					req := startRequest(j, in, q, servers)
					if len(j.Spec.CopyOut) > 0 || len(j.Spec.Checkpoint) > 0 {
						req.CopyOutMax = d.cfg.MaxCopySize
					}
					req.MachineIndex = m.ModifyIndex
					starts = append(starts, startWork{st: st, machine: machine, addr: m.Addr, req: req, placedAt: in.PlacedAt})
				}
				return true
			}
			q, _ := v.Queue(j.Queue)
			sk, sig, grace, ok := owedSignal(j, in, q.Limits().Grace(planner.KillGrace))
			if !ok {
				return true
			}
			sk.AttemptRef = key
			st := owe(d.signals, sk, d.pass)
			d.retry = d.retry || awaitsRetry(st)
			if m, ok := v.Machine(machine); ok && due(st, now) {
				st.inflight = true
				signals = append(signals, signalWork{st: st, machine: machine, addr: m.Addr, req: client.SignalRequest{
					JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Signal: sig, GraceMS: grace,
				}})
			}
			return true
		})
	})
	if !walk {
		return
	}
	forget(d.starts, d.pass)
	forget(d.signals, d.pass)
	d.sendStarts(ctx, starts)
	for _, w := range signals {
		d.send(ctx, w.st, w.machine, w.addr, func(ctx context.Context, c *client.StubClient) error {
			return d.cfg.Metrics.signalled(c.Signal(ctx, w.req))
		})
	}
}

// sendStarts sends the Starts of one pass: one POST /v1/starts per stub
// (per startBatchMax Starts). Called with d.mu held.
func (d *Dispatcher) sendStarts(ctx context.Context, starts []startWork) {
	var (
		addrs  []string
		byAddr = make(map[string][]startWork)
	)
	for _, w := range starts {
		if _, ok := byAddr[w.addr]; !ok {
			addrs = append(addrs, w.addr)
		}
		byAddr[w.addr] = append(byAddr[w.addr], w)
	}
	for _, addr := range addrs {
		ws := byAddr[addr]
		for len(ws) > 0 {
			n := min(len(ws), startBatchMax)
			d.sendBatch(ctx, addr, ws[:n:n])
			ws = ws[n:]
		}
	}
}

// sendBatch runs one POST /v1/starts to the stub at addr in its own
// goroutine, commits the CHILD_REGISTERs the stub answered with, and
// settles each Start from its own result; a failed request fails them
// all, and a Start whose REGISTER was not committed is sent again. Called
// with d.mu held.
func (d *Dispatcher) sendBatch(ctx context.Context, addr string, ws []startWork) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		errs, regs, err := make([]error, len(ws)), []*client.ChildEvent(nil), d.takeSlot(ctx)
		if err == nil {
			errs, regs, err = d.startBatch(ctx, addr, ws)
			<-d.slots
		}
		if err == nil {
			d.commitRegisters(ws, regs, errs)
		}
		for i, w := range ws {
			if err != nil {
				errs[i] = err
			}
			d.cfg.Metrics.started(w.placedAt, errs[i])
		}
		d.mu.Lock()
		if err != nil {
			d.h.Log().Warn("start batch to stub failed; will retry", "stub", addr, "starts", len(ws), "err", err)
		}
		for i, w := range ws {
			if d.settle(w.st, errs[i]) && err == nil {
				d.h.Log().Warn("start refused by stub; will retry", "stub", addr, "job", w.req.JobID,
					"instance", w.req.Instance, "attempt", w.req.Attempt, "failures", w.st.failures, "err", errs[i])
			}
		}
		d.mu.Unlock()
		d.wake()
	}()
}

// startBatch sends the Starts ws to the stub at addr and returns each
// one's error and the CHILD_REGISTER the stub answered with (nil for
// none), or err when the request as a whole failed.
func (d *Dispatcher) startBatch(ctx context.Context, addr string, ws []startWork) (errs []error, regs []*client.ChildEvent, err error) {
	errs = make([]error, len(ws))
	regs = make([]*client.ChildEvent, len(ws))
	c, err := d.cfg.StubClient(ws[0].machine, addr)
	if err != nil {
		return errs, regs, err
	}
	req := client.StartBatchRequest{Starts: make([]client.StartRequest, len(ws))}
	for i, w := range ws {
		req.Starts[i] = w.req
	}
	cctx, cancel := context.WithTimeout(ctx, sendTimeout)
	d.cfg.Metrics.StartRequests.Inc()
	resp, err := c.StartBatch(cctx, req)
	cancel()
	if err != nil {
		return errs, regs, err
	}
	for i, res := range resp.Results {
		if errs[i] = res.Err(); errs[i] == nil {
			regs[i] = res.Register
		}
	}
	return errs, regs, nil
}

// commitRegisters commits, through Config.CommitChildren, the CHILD_REGISTERs
// regs with which a stub answered the Starts ws. Should that fail, the
// Starts they answered fail too (errs), so that they are sent again and
// the stub answers with its REGISTER again: until it is committed the
// attempt stays placed, and owed its Start.
func (d *Dispatcher) commitRegisters(ws []startWork, regs []*client.ChildEvent, errs []error) {
	var (
		evs []client.ChildEvent
		at  []int // the Start each event answers
	)
	for i, ev := range regs {
		if ev == nil {
			continue
		}
		if err := registerAnswers(*ev, ws[i].req); err != nil {
			errs[i] = err
			continue
		}
		evs = append(evs, *ev)
		at = append(at, i)
	}
	if len(evs) == 0 {
		return
	}
	_, refused, err := d.cfg.CommitChildren(evs)
	for k, i := range at {
		switch {
		case refused[k] != nil:
			errs[i] = fmt.Errorf("start answered with a CHILD_REGISTER: %w", refused[k])
		case err != nil:
			errs[i] = fmt.Errorf("commit CHILD_REGISTER from start answer: %w", err)
		}
	}
}

// registerAnswers checks that ev, from a Start's answer, is the
// CHILD_REGISTER of the attempt req started.
func registerAnswers(ev client.ChildEvent, req client.StartRequest) error {
	if ev.Kind != client.ChildRegister || ev.JobID != req.JobID || ev.Instance != req.Instance || ev.Attempt != req.Attempt {
		return fmt.Errorf("start of attempt %d of %d/%d answered with %s of attempt %d of %d/%d",
			req.Attempt, req.JobID, req.Instance, ev.Kind, ev.Attempt, ev.JobID, ev.Instance)
	}
	return nil
}

// owedSignal is the signal the database says a started attempt is owed:
// the kill, restart or preemption signal (SIGKILL follows after grace,
// the job's queue's kill grace), SIGSTOP while suspended, SIGCONT after a resume.
func owedSignal(j *fsm.Job, in *fsm.Instance, grace time.Duration) (key signalKey, sig string, graceMS int64, ok bool) {
	switch {
	case in.KillRequested:
		return signalKey{what: "kill"}, j.KillSignal, grace.Milliseconds(), true
	case in.RestartRequested:
		return signalKey{what: "restart"}, "TERM", grace.Milliseconds(), true
	case in.Preempt == fsm.PreemptRequeue && in.State == fsm.InstanceRunning:
		// Stopped for a preempting job: its warning signal (or SIGTERM),
		// then SIGKILL after the grace, as a restart.
		sig := j.Spec.WarnSignal
		if sig == "" {
			sig = "TERM"
		}
		return signalKey{what: "preempt"}, sig, grace.Milliseconds(), true
	case in.State == fsm.InstanceSuspended:
		return signalKey{what: "stop", index: in.SuspendIndex}, "STOP", 0, true
	case in.State == fsm.InstanceRunning && in.ResumeIndex > in.SuspendIndex:
		return signalKey{what: "cont", index: in.ResumeIndex}, "CONT", 0, true
	}
	return signalKey{}, "", 0, false
}

// owe returns the send state of key, made if new, marked as owed in pass.
func owe[K comparable](m map[K]*sendState, key K, pass uint64) *sendState {
	st, ok := m[key]
	if !ok {
		st = &sendState{}
		m[key] = st
	}
	st.pass = pass
	return st
}

// awaitsRetry reports whether a send failed and waits out its backoff:
// passes must keep walking until it is due and sent again.
func awaitsRetry(st *sendState) bool {
	return !st.inflight && !st.acked && st.failures > 0
}

// due reports whether a send is due now: none in flight, none
// acknowledged, and its retry backoff over.
func due(st *sendState, now time.Time) bool {
	return !st.inflight && !st.acked && !now.Before(st.retryAt)
}

// forget drops the send states the database no longer owes (their attempt
// started, ended or was signalled as owed), unless a send is in flight.
func forget[K comparable](m map[K]*sendState, pass uint64) {
	for k, st := range m {
		if st.pass != pass && !st.inflight {
			delete(m, k)
		}
	}
}

// send runs one request to a stub in its own goroutine. Called with d.mu held.
func (d *Dispatcher) send(ctx context.Context, st *sendState, machine, addr string, call func(context.Context, *client.StubClient) error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		err := d.takeSlot(ctx)
		if err == nil {
			var c *client.StubClient
			if c, err = d.cfg.StubClient(machine, addr); err == nil {
				cctx, cancel := context.WithTimeout(ctx, sendTimeout)
				err = call(cctx, c)
				cancel()
			}
			<-d.slots
		}
		d.mu.Lock()
		if d.settle(st, err) {
			d.h.Log().Warn("dispatch to stub failed; will retry", "stub", addr, "failures", st.failures, "err", err)
		}
		d.mu.Unlock()
		d.wake()
	}()
}

// takeSlot waits for one of the sendSlots, which the caller gives back
// with <-d.slots, or for ctx to end.
func (d *Dispatcher) takeSlot(ctx context.Context) error {
	select {
	case d.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait to send to a stub: %w", ctx.Err())
	}
}

// settle records the outcome of a send: acknowledged, or failed and due
// again after a backoff (100 ms doubling to 5 s), which makes the next
// passes walk until it is sent. It reports whether the send failed.
// Called with d.mu held.
func (d *Dispatcher) settle(st *sendState, err error) (failed bool) {
	st.inflight = false
	if err == nil {
		st.acked = true
		return false
	}
	d.retry = true
	st.failures++
	st.retryAt = time.Now().Add(min(100*time.Millisecond<<min(st.failures, 6), 5*time.Second))
	return true
}

// wake tells the leader loop a send finished, without blocking.
func (d *Dispatcher) wake() {
	select {
	case d.done <- struct{}{}:
	default:
	}
}

// startRequest is the Start of instance in of job j, whose queue is q.
// Its limits are the attempt's: the smaller of the queue's and the job's
// own (time=, memory=), the queue's kill grace, and the job's warning
// when a time limit applies.
func startRequest(j *fsm.Job, in *fsm.Instance, q fsm.QueueView, servers []string) client.StartRequest {
	lim := q.Limits()
	run := lim.EffectiveRun(j.Spec.TimeLimitSeconds)
	mem := q.MaxMemMB
	if j.Spec.MemoryMB > 0 && (mem == 0 || j.Spec.MemoryMB < mem) {
		mem = j.Spec.MemoryMB
	}
	warn, lead := "", int64(0)
	if run > 0 && j.Spec.WarnSignal != "" {
		warn, lead = j.Spec.WarnSignal, j.Spec.WarnLeadSeconds*1000
	}
	ckBlob, ckSize, ckSignal := "", int64(0), ""
	if c := in.Checkpoint; c != nil {
		ckBlob, ckSize = c.Blob, c.Size
	}
	if j.Spec.HasCheckpoint() {
		ckSignal = cmp.Or(j.Spec.WarnSignal, "TERM")
	}
	return client.StartRequest{
		Restartable:   j.Spec.Restartable(),
		OwnerPolicy:   maps.Clone(q.Owner),
		MaxRunSeconds: int64(run / time.Second),
		MaxMemMB:      mem,
		GraceMS:       lim.Grace(planner.KillGrace).Milliseconds(),
		WarnSignal:    warn,
		WarnLeadMS:    lead,
		JobID:         j.ID,
		JobName:       j.Name,
		Owner:         j.Owner,
		Instance:      in.Index,
		Attempt:       in.Attempt,
		Binary:        j.Spec.Binaries[in.Key],
		Args:          append([]string(nil), j.Spec.Args...),
		Env:           append([]string(nil), j.Spec.Env...),
		Dir:           j.Spec.Dir,
		CopyInBlob:    j.Spec.CopyInBlob,
		CopyInSize:    j.Spec.CopyInSize,
		CopyOut:       append([]string(nil), j.Spec.CopyOut...),
		Servers:       servers,
		GangHosts:     gangHosts(j),
		CPUs:          cpusToSend(&j.Spec),
		ExclusiveCPUs: j.Spec.ExclusiveCPUs,
		GPUs:          append([]int(nil), in.GPUs...),
		DiskMB:        j.Spec.DiskMB,

		Checkpoint:       append([]string(nil), j.Spec.Checkpoint...),
		CheckpointExit:   j.Spec.CheckpointExit,
		CheckpointBlob:   ckBlob,
		CheckpointSize:   ckSize,
		CheckpointSignal: ckSignal,
	}
}

// cpusToSend is the CPU limit a Start carries: the job's --cpus when it
// asked for any (one CPU is asked with --cpus 1 too, and limited), 0
// for a job that did not, which runs unlimited as before.
func cpusToSend(s *fsm.JobSpec) int {
	if s.CPUs > 0 || s.ExclusiveCPUs {
		return s.CPUsPerInstance()
	}
	return 0
}

// gangHosts is the machine of every instance of gang job j in instance
// order, for the Start of each (StartRequest.GangHosts); nil for a job
// that is not a gang. The FSM places a gang's instances in one entry, so
// when one is owed its Start every instance has its machine.
func gangHosts(j *fsm.Job) []string {
	if !j.Spec.Gang {
		return nil
	}
	hosts := make([]string, len(j.Instances))
	for i := range j.Instances {
		hosts[i] = j.Instances[i].Machine
	}
	return hosts
}
