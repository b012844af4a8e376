package stub

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/owner"
	"golang.org/x/sys/unix"
)

// ReasonOwnerReturned is the Reason of an attempt the stub ended because
// the machine's owner came back and it stayed asleep past --vacate-after.
const ReasonOwnerReturned = "owner returned"

// ownerSweepEvery is how often, while the machine sleeps, the policy
// looks for attempts that started meanwhile (a Start sent before the
// servers knew) and for the vacate deadline.
const ownerSweepEvery = 250 * time.Millisecond

// ownerPolicy acts on the owner verdict, as HTCondor's desktop policy
// does: when the machine falls asleep it suspends every running job at
// once (SIGSTOP of its process group and cgroup, through its supervisor);
// when it wakes within vacateAfter it resumes them; past vacateAfter it
// vacates them: a restartable job is killed (one that checkpoints is
// first asked to, stopForCheckpoint) and its CHILD_TERM says it is
// the machine's doing, so the servers start it elsewhere as a new attempt
// without counting a restart, another is killed with ReasonOwnerReturned,
// or, with keepSuspended, stays suspended until the machine wakes. It
// never touches a job that was already stopped (netkill --suspend): that
// one is the user's to resume. Its state belongs to its run goroutine.
type ownerPolicy struct {
	watch  *owner.Watch
	runner *runner
	file   string // where the attempts it suspended are listed
	log    *slog.Logger

	mu            sync.Mutex // guards the machine's policy; setMachine changes it
	vacateAfter   time.Duration
	keepSuspended bool

	asleepSince time.Time                    // zero while awake
	suspended   map[client.AttemptRef]bool   // attempts this policy stopped
	vacated     map[client.AttemptRef]string // what vacate did to each, for the log
}

// ownerSuspendedFile, under DataDir, lists the attempts the owner policy
// suspended, one "job.instance.attempt" a line, so that a stub started
// again resumes them when the machine wakes.
const ownerSuspendedFile = "owner-suspended"

func newOwnerPolicy(w *owner.Watch, r *runner, dataDir string, vacateAfter time.Duration, keepSuspended bool, log *slog.Logger) *ownerPolicy {
	return &ownerPolicy{watch: w, runner: r, file: filepath.Join(dataDir, ownerSuspendedFile), vacateAfter: vacateAfter,
		keepSuspended: keepSuspended, log: log, suspended: map[client.AttemptRef]bool{}, vacated: map[client.AttemptRef]string{}}
}

// setMachine changes the machine's policy (the database's settings
// arrived); a job's queue may still override it.
func (p *ownerPolicy) setMachine(vacateAfter time.Duration, keepSuspended bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.vacateAfter, p.keepSuspended = max(vacateAfter, 0), keepSuspended
}

// policyOf is how attempt k is treated once suspended: the machine's
// policy overridden by its queue's.
func (p *ownerPolicy) policyOf(k client.AttemptRef) (vacateAfter time.Duration, keepSuspended bool) {
	p.mu.Lock()
	vacateAfter, keepSuspended = p.vacateAfter, p.keepSuspended
	p.mu.Unlock()
	return queuePolicy(vacateAfter, keepSuspended, p.runner.ownerPolicyOf(k))
}

// run acts on each change of the verdict, and sweeps while asleep, until
// ctx ends. Jobs it suspended stay so when the stub stops; the stub that
// follows reads which from the file and resumes them when the machine
// wakes (counting their time asleep afresh).
//
// The sweep ticks only while the machine sleeps: awake, act has nothing
// to do until the verdict changes, and a stub at rest should not wake
// four times a second for nothing (issue 36: a workstation's owner
// should not notice the stub).
func (p *ownerPolicy) run(ctx context.Context) {
	tick := time.NewTicker(ownerSweepEvery)
	defer tick.Stop()
	tick.Stop() // started by the first sleep (Reset)
	sweeping := false
	p.load()
	p.act(ctx, time.Now())
	for {
		if asleep := !p.asleepSince.IsZero(); asleep != sweeping {
			if asleep {
				tick.Reset(ownerSweepEvery)
			} else {
				tick.Stop()
			}
			sweeping = asleep
		}
		select {
		case <-ctx.Done():
			return
		case <-p.watch.Changed():
		case <-tick.C:
		}
		p.act(ctx, time.Now())
	}
}

// act brings the jobs in line with the verdict at now.
func (p *ownerPolicy) act(ctx context.Context, now time.Time) {
	reason := p.watch.Verdict()
	if reason == "" {
		if !p.asleepSince.IsZero() {
			p.asleepSince = time.Time{}
			p.resumeAll(ctx)
		}
		return
	}
	if p.asleepSince.IsZero() {
		p.asleepSince = now
	}
	asleep := now.Sub(p.asleepSince)
	p.forgetEnded()
	for _, k := range p.runner.runningAttempts() {
		if _, done := p.vacated[k]; done {
			continue
		}
		if !p.suspended[k] {
			p.suspend(ctx, k, reason)
		} else if pgid := p.runner.groupOf(k); pgid > 0 && !stopped(pgid) {
			// The kernel continues a stopped process group that is
			// orphaned when one of its processes exits (with SIGHUP,
			// which a job may ignore): a child ending just as the
			// group stopped undoes the stop. Stop it again.
			if err := p.runner.signal(ctx, k, unix.SIGSTOP, 0); err != nil {
				p.log.Warn("owner policy: suspend job again", "attempt", k, "err", err)
			}
		}
		if vacateAfter, keep := p.policyOf(k); asleep >= vacateAfter && p.suspended[k] {
			p.vacate(ctx, k, vacateAfter, keep)
		}
	}
}

// forgetEnded drops the attempts that ended while suspended (killed by
// netkill, a limit, or the lease).
func (p *ownerPolicy) forgetEnded() {
	changed := false
	for k := range p.suspended {
		if p.runner.groupOf(k) == 0 {
			delete(p.suspended, k)
			changed = true
		}
	}
	for k := range p.vacated {
		if p.runner.groupOf(k) == 0 {
			delete(p.vacated, k)
		}
	}
	if changed {
		p.save()
	}
}

// suspend stops attempt k's job unless it is already stopped.
func (p *ownerPolicy) suspend(ctx context.Context, k client.AttemptRef, reason string) {
	pgid := p.runner.groupOf(k)
	if pgid <= 0 {
		return
	}
	if stopped(pgid) {
		p.log.Info("owner policy: job already stopped; left to its user", "attempt", k)
		p.vacated[k] = "left stopped"
		return
	}
	if err := p.runner.signal(ctx, k, unix.SIGSTOP, 0); err != nil {
		p.log.Warn("owner policy: suspend job", "attempt", k, "err", err)
		return
	}
	p.suspended[k] = true
	p.save()
	p.log.Info("owner policy: job suspended", "attempt", k, "reason", reason)
}

// vacate ends or keeps a job suspended for longer than its vacateAfter;
// keep keeps one that is not restartable.
func (p *ownerPolicy) vacate(ctx context.Context, k client.AttemptRef, vacateAfter time.Duration, keep bool) {
	restartable := p.runner.markVacated(k)
	if !restartable && keep {
		p.vacated[k] = "kept suspended"
		p.log.Info("owner policy: job kept suspended until the machine wakes", "attempt", k)
		return
	}
	// A job that checkpoints gets its signal and its grace to keep one
	// first (stopForCheckpoint); any other is killed at once.
	asked, err := p.runner.stopForCheckpoint(ctx, k)
	if err != nil {
		p.log.Warn("owner policy: vacate job", "attempt", k, "err", err)
		if !asked {
			return
		}
	}
	delete(p.suspended, k)
	p.save()
	switch {
	case asked:
		p.vacated[k] = "asked to checkpoint, then restarted elsewhere"
	case restartable:
		p.vacated[k] = "restarted elsewhere"
	default:
		p.vacated[k] = "killed"
	}
	p.log.Warn("owner policy: job vacated", "attempt", k, "after", vacateAfter, "outcome", p.vacated[k])
}

// resumeAll continues every job this policy suspended that still runs,
// including those kept suspended past vacateAfter.
func (p *ownerPolicy) resumeAll(ctx context.Context) {
	p.forgetEnded()
	for k := range p.suspended {
		if err := p.runner.signal(ctx, k, unix.SIGCONT, 0); err != nil {
			p.log.Warn("owner policy: resume job", "attempt", k, "err", err)
			continue
		}
		p.log.Info("owner policy: job resumed", "attempt", k)
	}
	clear(p.suspended)
	clear(p.vacated)
	p.save()
}

// load reads the attempts an earlier stub suspended, still running.
func (p *ownerPolicy) load() {
	data, err := os.ReadFile(p.file)
	if err != nil {
		return
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, ok := parseAttemptName(strings.TrimSpace(line)); ok && p.runner.groupOf(k) > 0 {
			p.suspended[k] = true
		}
	}
	if len(p.suspended) > 0 {
		p.asleepSince = time.Now() // resumed below if the machine is awake
		p.log.Info("owner policy: jobs an earlier stub suspended", "attempts", len(p.suspended))
	}
}

// save lists the attempts this policy suspended in its file.
func (p *ownerPolicy) save() {
	var b strings.Builder
	for _, k := range slices.SortedFunc(maps.Keys(p.suspended), compareRefs) {
		b.WriteString(k.String() + "\n")
	}
	if err := writeFileAtomic(p.file, []byte(b.String())); err != nil {
		p.log.Warn("owner policy: record suspended jobs", "err", err)
	}
}

// compareRefs orders attempts by job, instance and attempt.
func compareRefs(a, b client.AttemptRef) int {
	return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Attempt, b.Attempt))
}

// writeFileAtomic replaces path with data through a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// stopped reports whether process group pgid is stopped: some process
// of it is stopped (state T) and none runs or sleeps (R, S). A shell whose
// child was stopped between vfork and exec waits in state D; it counts
// as stopped, since it cannot run until the child is continued.
func stopped(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	seenStopped := false
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, pgrp, ...
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		switch f[0] {
		case "T", "t":
			seenStopped = true
		case "R", "S":
			return false
		}
	}
	return seenStopped
}
