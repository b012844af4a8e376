package server

import (
	"context"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// killGrace is how long a stub waits after the first signal (netkill,
// netmgr restart, a queue's run limit) before it sends SIGKILL to the
// job's process group.
const killGrace = 10 * time.Second

// attemptKey names one attempt of one instance: the unit a Start or a
// kill Signal is sent for, and the key stubs deduplicate by.
type attemptKey struct {
	JobID    uint64
	Instance int
	Attempt  uint64
}

// sendState is the leader's soft memory of one Start or Signal.
type sendState struct {
	inflight bool
	acked    bool
	failures int
	retryAt  time.Time
	pass     uint64 // the last pass that found it owed
}

// dispatcher sends Starts for placed attempts and kill Signals for attempts
// of killed jobs, level-triggered from the database: every pass sends what
// the database says is owed and not yet acknowledged, so a new leader
// simply re-sends (stubs ignore repeats). Sends never block the pass.
type dispatcher struct {
	s    *Server
	done chan struct{} // a send finished; the leader loop runs another pass
	wg   sync.WaitGroup

	mu      sync.Mutex // guards starts, signals and pass
	starts  map[attemptKey]*sendState
	signals map[signalKey]*sendState
	pass    uint64 // counts passes, to forget what is no longer owed
}

// signalKey names one signal decision for an attempt: a kill, a restart,
// or the suspend or resume committed at index.
type signalKey struct {
	attemptKey
	what  string
	index uint64
}

func newDispatcher(s *Server) *dispatcher {
	return &dispatcher{
		s:       s,
		done:    make(chan struct{}, 1),
		starts:  make(map[attemptKey]*sendState),
		signals: make(map[signalKey]*sendState),
	}
}

// wait blocks until every send this dispatcher started has returned.
func (d *dispatcher) wait() { d.wg.Wait() }

type startWork struct {
	st       *sendState
	addr     string
	req      client.StartRequest
	placedAt time.Time
}

type signalWork struct {
	st   *sendState
	addr string
	req  client.SignalRequest
}

// dispatch starts the sends the database owes. It runs after every
// commit, so it walks the active instances without sorting them and
// builds a request only for a send that is due: most active instances run
// and are owed nothing, and most owed sends are in flight or acknowledged.
func (d *dispatcher) dispatch(ctx context.Context) {
	servers := d.serverHints()
	var (
		starts  []startWork
		signals []signalWork
	)
	now := time.Now()
	// d.mu, then the database's read lock: the send goroutines take d.mu
	// alone, so the order cannot deadlock.
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pass++
	d.s.fsm.Read(func(v fsm.View) {
		v.EachActive(func(ref fsm.InstanceRef, machine string) bool {
			j, in, _ := v.Instance(ref)
			key := attemptKey{JobID: j.ID, Instance: in.Index, Attempt: in.Attempt}
			if in.State == fsm.InstancePlaced {
				st := owe(d.starts, key, d.pass)
				if m, ok := v.Machine(machine); ok && due(st, now) {
					q, _ := v.Queue(j.Queue)
					st.inflight = true
					starts = append(starts, startWork{st: st, addr: m.Addr, req: startRequest(j, in, q, servers), placedAt: in.PlacedAt})
				}
				return true
			}
			sk, sig, grace, ok := owedSignal(j, in)
			if !ok {
				return true
			}
			sk.attemptKey = key
			st := owe(d.signals, sk, d.pass)
			if m, ok := v.Machine(machine); ok && due(st, now) {
				st.inflight = true
				signals = append(signals, signalWork{st: st, addr: m.Addr, req: client.SignalRequest{
					JobID: j.ID, Instance: in.Index, Attempt: in.Attempt, Signal: sig, GraceMS: grace,
				}})
			}
			return true
		})
	})
	forget(d.starts, d.pass)
	forget(d.signals, d.pass)
	for _, w := range starts {
		d.send(ctx, w.st, w.addr, func(ctx context.Context, c *client.StubClient) error {
			return d.s.metrics.started(w.placedAt, c.Start(ctx, w.req))
		})
	}
	for _, w := range signals {
		d.send(ctx, w.st, w.addr, func(ctx context.Context, c *client.StubClient) error {
			return d.s.metrics.signalled(c.Signal(ctx, w.req))
		})
	}
}

// owedSignal is the signal the database says a started attempt is owed:
// the kill or restart signal (SIGKILL follows after killGrace), SIGSTOP
// while suspended, SIGCONT after a resume.
func owedSignal(j *fsm.Job, in *fsm.Instance) (key signalKey, sig string, graceMS int64, ok bool) {
	switch {
	case in.KillRequested:
		return signalKey{what: "kill"}, j.KillSignal, killGrace.Milliseconds(), true
	case in.RestartRequested:
		return signalKey{what: "restart"}, "TERM", killGrace.Milliseconds(), true
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
func (d *dispatcher) send(ctx context.Context, st *sendState, addr string, call func(context.Context, *client.StubClient) error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		c, err := client.NewStub(addr, d.s.hc)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = call(cctx, c)
			cancel()
		}
		d.mu.Lock()
		st.inflight = false
		if err == nil {
			st.acked = true
		} else {
			st.failures++
			st.retryAt = time.Now().Add(min(100*time.Millisecond<<min(st.failures, 6), 5*time.Second))
			d.s.log.Warn("dispatch to stub failed; will retry", "stub", addr, "failures", st.failures, "err", err)
		}
		d.mu.Unlock()
		select {
		case d.done <- struct{}{}:
		default:
		}
	}()
}

// serverHints lists the servers' API addresses for stubs.
func (d *dispatcher) serverHints() []string {
	var out []string
	for _, meta := range d.s.gossip.servers() {
		out = append(out, meta.HTTP)
	}
	return out
}

func startRequest(j *fsm.Job, in *fsm.Instance, q fsm.QueueView, servers []string) client.StartRequest {
	return client.StartRequest{
		Restartable:   j.Spec.Restartable(),
		MaxRunSeconds: q.MaxRunSeconds,
		MaxMemMB:      q.MaxMemMB,
		GraceMS:       killGrace.Milliseconds(),
		JobID:         j.ID,
		JobName:       j.Name,
		Owner:         j.Owner,
		Instance:      in.Index,
		Attempt:       in.Attempt,
		Binary:        j.Spec.Binaries[in.Key],
		Args:          append([]string(nil), j.Spec.Args...),
		Env:           append([]string(nil), j.Spec.Env...),
		Servers:       servers,
	}
}
