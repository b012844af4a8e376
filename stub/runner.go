package stub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

const (
	// lostExitCode is the exit code reported with a lost attempt: unknown,
	// as os.ProcessState.ExitCode says.
	lostExitCode = -1
	// lostError is the Error of an attempt whose supervisor is gone
	// without a result.
	lostError = "lost: supervisor gone"
	// maxWatchBackoff bounds the pause between two looks at a supervisor
	// that does not answer.
	maxWatchBackoff = 2 * time.Second
	// attemptsDir, under DataDir, holds the attempts' supervisor
	// directories, and the supervisor host's socket and log.
	attemptsDir = "attempts"
	// checkpointsDir, under DataDir, holds the local copies of the
	// checkpoints this machine's attempts kept (stub/ckptcache).
	checkpointsDir = "checkpoints"
)

// attempt is the stub's view of one attempt.
type attempt struct {
	ready chan struct{} // closed once Start has decided what happened
	// The fields below are guarded by runner.mu and final once ready is
	// closed, except exited and reason.
	rec         outbox.Record     // what the outbox keeps
	dir         string            // supervisor directory
	restartable bool              // the job has a restart policy
	ownerPolicy map[string]string // the queue's desktop policy; nil for the machine's
	supervised  bool              // a supervisor runs it (false when the exec failed)
	pgid        int               // the job's process group, its first pid; 0 when not supervised
	exited      bool              // its CHILD_TERM is recorded
	// ended brings the attempt's result when its supervisor pushes it (a
	// simulated supervisor, or the host over the stub's lifeline); it is
	// closed without one when the push cannot come any more, and nil for
	// an attempt whose end the stub asks its supervisor for.
	ended <-chan supervisor.Result
	// reason is why the stub ended it (its lease ran out), "" if it did
	// not; a limit's reason, which the supervisor reports, comes first.
	reason string
	// vacated is set when the owner policy ended a restartable attempt
	// for its machine's owner: its CHILD_TERM is the machine's fault, so
	// the servers start it elsewhere without counting a restart.
	vacated bool
	// cpus are the CPUs of an exclusive attempt's cpuset (pickCPUs).
	cpus []int
}

// running reports whether a supervisor runs a and its end is not recorded
// yet. The caller holds runner.mu.
func (a *attempt) running() bool { return a.supervised && !a.exited }

// runner starts attempts, each under a supervisor, and reports their
// ends: runner_start.go starts one, this file watches it and records its
// end, runner_recover.go takes over those of an earlier stub. It is safe
// for concurrent use.
type runner struct {
	machine string
	execDir string
	// clusterDir is the directory in execDir of the cluster's attempts,
	// named by its id (execdirs.go).
	clusterDir string
	dataDir    string // supervisor directories live in dataDir/attempts
	cgroups    string // directory of the jobs' cgroups; "" = process groups
	out        *outbox.Outbox
	log        *slog.Logger
	sup        supervisors // the supervisor host's client, or the simulator
	// execKits and supKits are exec and supervisor directories made
	// ahead of the Starts that rename them into place.
	execKits, supKits *dirKits
	// health says whether the machine takes new work, and what is wrong
	// with it when an attempt fails for its sake; nil in some tests.
	health *healthWatch
	// scripts are the site's prologue and epilogue; nil runs none.
	scripts *siteScripts
	// servers reach the server group for the files jobs move (files.go);
	// nil in tests without one.
	servers *serverList
	// hasGPUs is set when the machine has GPUs (found or declared in the
	// init file): a job given none is then told it has none.
	hasGPUs bool
	// enforce says how the machine enforces an attempt's CPUs and GPUs:
	// the cgroup v1 hierarchies each attempt gets a directory in.
	enforce enforcementPlan
	// sessions holds the interactive sessions of its attempts
	// (sessions.go).
	sessions *sessions
	// ckpts is the local copy of kept checkpoints, opened on first use
	// (checkpoints.go).
	ckpts ckptCache

	ctx      context.Context // canceled by close
	cancel   context.CancelFunc
	watchers sync.WaitGroup // one watch goroutine per running attempt

	mu       sync.Mutex // guards attempts, closed and the attempt fields
	attempts map[client.AttemptRef]*attempt
	closed   bool
}

// newRunner returns a runner with no attempts; recover adds those of an
// earlier stub on the same DataDir. Its attempts run under the stub's
// supervisor host, or under simulated supervisors when sim is not nil.
// health (nil for none) tells it when the machine takes no new work and
// why an attempt failed for the machine's sake.
func newRunner(machine, execDir, clusterID, dataDir, cgroups string, sim *Simulation, out *outbox.Outbox, health *healthWatch, log *slog.Logger) *runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{
		machine:    machine,
		execDir:    execDir,
		clusterDir: filepath.Join(execDir, clusterID),
		dataDir:    dataDir,
		cgroups:    cgroups,
		out:        out,
		health:     health,
		log:        log,
		execKits:   &dirKits{root: execDir, files: []string{"stdout", "stderr"}},
		supKits:    &dirKits{root: filepath.Join(dataDir, attemptsDir)},
		ctx:        ctx,
		cancel:     cancel,
		attempts:   make(map[client.AttemptRef]*attempt),
	}
	r.sessions = newSessions(log, r.signal)
	r.ckpts.dataDir, r.ckpts.log = dataDir, log
	if sim != nil {
		r.sup = supervisor.NewSimulator(sim.RunTime, log)
	} else {
		r.sup = supervisor.NewClient(filepath.Join(dataDir, attemptsDir), r.supKits.take, log)
	}
	return r
}

// supDir is the supervisor directory of attempt k.
func (r *runner) supDir(k client.AttemptRef) string {
	return filepath.Join(r.dataDir, attemptsDir, k.String())
}

// signal asks the attempt's supervisor to send sig to its job and, when
// grace is positive, SIGKILL after grace if the job is still alive. It
// waits for a Start of the same attempt in progress. An attempt that has
// ended, or never started, is signalled no more: that is no error.
func (r *runner) signal(ctx context.Context, k client.AttemptRef, sig unix.Signal, grace time.Duration) error {
	r.mu.Lock()
	a, ok := r.attempts[k]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("signal attempt %s: %w", k, ErrUnknownAttempt)
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		return fmt.Errorf("signal attempt %s: %w", k, ctx.Err())
	}
	r.mu.Lock()
	running, dir := a.running(), a.dir
	r.mu.Unlock()
	if !running {
		return nil
	}
	if err := r.sup.Signal(ctx, dir, sig, grace); err != nil {
		if _, oerr := r.sup.Outcome(dir); oerr == nil {
			return nil // it ended meanwhile
		}
		return fmt.Errorf("signal attempt %s: %w", k, err)
	}
	r.log.Info("attempt signalled", "attempt", k, "signal", strings.TrimPrefix(unix.SignalName(sig), "SIG"), "grace", grace)
	return nil
}

// stopRestartable SIGKILLs the jobs of running restartable attempts
// through their supervisors (which check the job's identity, so a recycled
// pid is never hit), recording why, and reports how many it stopped. Their
// CHILD_TERM still goes to the servers, which fence it as stale.
func (r *runner) stopRestartable(ctx context.Context) int {
	type target struct {
		k   client.AttemptRef
		dir string
	}
	var targets []target
	r.mu.Lock()
	for k, a := range r.attempts {
		if !a.restartable || !a.running() {
			continue
		}
		if a.reason == "" {
			a.reason = client.ReasonLeaseExpired
		}
		targets = append(targets, target{k, a.dir})
	}
	r.mu.Unlock()
	n := 0
	for _, t := range targets {
		if err := r.sup.Signal(ctx, t.dir, unix.SIGKILL, 0); err != nil {
			r.log.Error("stop restartable attempt: lease expired", "attempt", t.k, "err", err)
			continue
		}
		r.log.Warn("stopped restartable attempt: lease expired", "attempt", t.k)
		n++
	}
	return n
}

// runningAttempts lists the attempts this stub runs now.
func (r *runner) runningAttempts() []client.AttemptRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []client.AttemptRef
	for k, a := range r.attempts {
		if a.running() {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b client.AttemptRef) int {
		return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Attempt, b.Attempt))
	})
	return out
}

// jobGroups lists the process groups of the jobs this stub runs now: the
// owner policy subtracts their CPU from the load.
func (r *runner) jobGroups() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, a := range r.attempts {
		if a.running() && a.pgid > 0 {
			out = append(out, a.pgid)
		}
	}
	return out
}

// groupOf returns the process group of running attempt k's job; 0 when
// it does not run.
func (r *runner) groupOf(k client.AttemptRef) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.attempts[k]; ok && a.running() {
		return a.pgid
	}
	return 0
}

// markVacated records that the owner policy ends attempt k (its reason is
// ReasonOwnerReturned) and reports whether it is restartable.
func (r *runner) markVacated(k client.AttemptRef) (restartable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.attempts[k]
	if !ok {
		return false
	}
	if a.reason == "" {
		a.reason = ReasonOwnerReturned
	}
	a.vacated = a.restartable
	return a.restartable
}

// ownerPolicyOf returns the desktop policy attempt k's queue sets
// (StartRequest.OwnerPolicy), nil when it leaves it to the machine.
func (r *runner) ownerPolicyOf(k client.AttemptRef) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.attempts[k]; ok {
		return a.ownerPolicy
	}
	return nil
}

// hasRestartable reports whether a restartable attempt runs.
func (r *runner) hasRestartable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.attempts {
		if a.restartable && a.running() {
			return true
		}
	}
	return false
}

// watch starts the goroutine that waits for the end of a running attempt
// and records it.
func (r *runner) watch(k client.AttemptRef, a *attempt) {
	r.watchers.Go(func() { r.watchAttempt(k, a) })
}

// watchAttempt waits for the result its supervisor pushes, if it pushes
// one, or else asks the attempt's supervisor for it, which it answers
// once the job has ended, and records the CHILD_TERM. A supervisor that
// does not answer is looked at again, backing off, until its result file
// appears or it is certainly gone (its identity no longer verifies): then
// the attempt is lost. It returns early when the runner closes: a later
// stub on the same DataDir takes over.
func (r *runner) watchAttempt(k client.AttemptRef, a *attempt) {
	if a.ended != nil {
		select {
		case res, ok := <-a.ended:
			if ok {
				r.finish(k, a, res)
				return
			}
			// The push cannot come: ask, as for any other attempt.
		case <-r.ctx.Done():
			return
		}
	}
	backoff := 50 * time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		res, err := r.sup.Wait(r.ctx, a.dir)
		if err == nil {
			r.finish(k, a, res)
			return
		}
		if r.ctx.Err() != nil {
			return
		}
		if r.settle(k, a) {
			return
		}
		t.Reset(backoff)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			return
		}
		backoff = min(2*backoff, maxWatchBackoff)
	}
}

// settle records the end of attempt k if it can be known without asking
// its supervisor: its result, once written, or, when its supervisor is
// gone without one, that it is lost. It reports whether it recorded an
// end; false means the supervisor still runs.
func (r *runner) settle(k client.AttemptRef, a *attempt) bool {
	res, err := r.sup.Outcome(a.dir)
	switch {
	case err == nil:
		r.finish(k, a, res)
	case errors.Is(err, supervisor.ErrRunning):
		return false
	default:
		r.lost(k, a, err)
	}
	return true
}

// finish records the CHILD_TERM of an attempt whose supervisor reported
// res. An attempt that failed while the machine has a disk problem (its
// exec or data dir full: a job whose output cannot be written exits 1)
// failed for the machine's sake: its CHILD_TERM says so (machineFault).
func (r *runner) finish(k client.AttemptRef, a *attempt, res supervisor.Result) {
	ev := r.event(k, client.ChildTerm, res.EndedAt)
	ev.ExitCode, ev.Signal, ev.Error, ev.Reason = res.ExitCode, res.Signal, res.Error, res.Reason
	ev.UserMS, ev.SysMS, ev.MaxRSSKB = res.UserMS, res.SysMS, res.MaxRSSKB
	if len(res.Leftovers) > 0 {
		r.log.Info("the attempt's leftover processes were killed", "attempt", k, "processes", res.Leftovers)
		ev.Leftovers = wireLeftovers(res.Leftovers)
	}
	if failed := res.ExitCode != 0 || res.Signal != ""; failed && res.Reason == "" {
		r.machineFault(&ev)
	}
	r.mu.Lock()
	if a.vacated {
		// Ended for the machine's owner: the servers queue it again at
		// once, uncounted, and the asleep machine takes none of it.
		ev.MachineFault = true
	}
	r.mu.Unlock()
	r.log.Info("attempt ended", "attempt", k, "exit_code", ev.ExitCode, "signal", ev.Signal, "reason", ev.Reason,
		"machine_fault", ev.MachineFault)
	if js := r.sessions.get(k, ""); js != nil {
		js.ended(session.Exit{Code: ev.ExitCode, Signal: ev.Signal, Error: ev.Error, Reason: ev.Reason})
	}
	if !r.checkpoint(k, a, res) || !r.outputs(k, a) {
		return
	}
	r.recordEnd(k, a, ev)
	r.epilogue(k, a, ev)
}

// epilogue runs the site's epilogue, if there is one, after attempt k
// ended as ev says, and drains the machine when it fails. The attempt's
// end is recorded already: the epilogue delays no CHILD_TERM. One the
// stub's stop interrupts drains nothing.
func (r *runner) epilogue(k client.AttemptRef, a *attempt, ev client.ChildEvent) {
	if r.scripts == nil || r.scripts.epilogue == "" {
		return
	}
	r.mu.Lock()
	rec := a.rec
	r.mu.Unlock()
	problem := r.scripts.runEpilogue(r.ctx, r.machine, scriptAttempt{k: k, jobName: rec.JobName, owner: rec.Owner, execDir: rec.ExecDir, end: &ev})
	if problem != "" && r.ctx.Err() == nil {
		r.health.scriptFailed(problem)
	}
}

// lost records the CHILD_TERM of an attempt whose supervisor is gone
// without a result, after killing what may be left of its job. A
// supervisor that could not write its result for a full data dir makes
// the loss the machine's fault.
func (r *runner) lost(k client.AttemptRef, a *attempt, why error) {
	r.log.Warn("attempt lost: its supervisor is gone without a result", "attempt", k, "why", why)
	left := r.sup.KillLeftovers(a.dir)
	ev := r.event(k, client.ChildTerm, time.Now().UTC())
	ev.ExitCode, ev.Error = lostExitCode, lostError
	ev.Leftovers = wireLeftovers(left)
	r.machineFault(&ev)
	if js := r.sessions.get(k, ""); js != nil {
		js.ended(session.Exit{Code: ev.ExitCode, Error: ev.Error})
	}
	if !r.outputs(k, a) {
		return
	}
	r.recordEnd(k, a, ev)
	r.epilogue(k, a, ev)
}

// machineFault marks ev, the CHILD_TERM of a failed attempt, as the
// machine's fault when the machine's disks have a problem now (a fresh
// look): the servers queue the instance again without counting a
// restart. The problem goes in its Error.
func (r *runner) machineFault(ev *client.ChildEvent) {
	p := r.health.recheck()
	if p == "" {
		return
	}
	ev.MachineFault = true
	if ev.Error == "" {
		ev.Error = p
	} else {
		ev.Error += "; " + p
	}
}

// outputs keeps attempt k's copy_out before its end is recorded; false
// means the runner closed first.
func (r *runner) outputs(k client.AttemptRef, a *attempt) bool {
	r.mu.Lock()
	rec := a.rec
	r.mu.Unlock()
	return r.keepOutputs(k, rec)
}

// recordEnd records ev, the attempt's CHILD_TERM, with the attempt marked
// ended in the same transaction, so that no later stub reports it again.
func (r *runner) recordEnd(k client.AttemptRef, a *attempt, ev client.ChildEvent) {
	r.mu.Lock()
	rec := a.rec
	if ev.Reason == "" {
		ev.Reason = a.reason
	}
	r.mu.Unlock()
	rec.Ended, rec.EndedAt = true, time.Now().UTC()
	evs := []client.ChildEvent{ev}
	if rec.RegisterAnswered && rec.PID != 0 {
		// The REGISTER went only in the answer to a Start, which no
		// server may have committed: it goes again, before the TERM.
		evs = []client.ChildEvent{r.register(k, rec), ev}
	}
	if err := r.out.Record(k, &rec, evs...); err != nil {
		// A later stub on this DataDir finds the result and records it.
		r.log.Error("CHILD_TERM not recorded", "attempt", k, "err", err)
		return
	}
	r.mu.Lock()
	a.rec, a.exited = rec, true
	r.mu.Unlock()
}

// wireLeftovers converts killed leftover processes for a CHILD_TERM.
func wireLeftovers(ls []supervisor.Leftover) []client.Leftover {
	if len(ls) == 0 {
		return nil
	}
	out := make([]client.Leftover, len(ls))
	for i, l := range ls {
		out[i] = client.Leftover{PID: l.PID, Comm: l.Comm}
	}
	return out
}

// register returns the CHILD_REGISTER of attempt k as rec records it.
func (r *runner) register(k client.AttemptRef, rec outbox.Record) client.ChildEvent {
	ev := r.event(k, client.ChildRegister, rec.At)
	ev.PID = rec.PID
	return ev
}

// event returns an event of kind for attempt k.
func (r *runner) event(k client.AttemptRef, kind string, at time.Time) client.ChildEvent {
	return client.ChildEvent{
		Kind: kind, JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
		Machine: r.machine, At: at,
	}
}

// forget drops an attempt whose start was undone.
func (r *runner) forget(k client.AttemptRef) {
	r.mu.Lock()
	delete(r.attempts, k)
	r.mu.Unlock()
}

// close makes the runner refuse new attempts and stops its watch
// goroutines; running jobs and their supervisors are left alone.
func (r *runner) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.sup.Close()
	r.sessions.closeAll() // their jobs see their terminal hang up
	r.execKits.close()
	r.supKits.close()
	r.cancel()
}

// wait waits for the watch goroutines, which end at close.
func (r *runner) wait() { r.watchers.Wait() }
