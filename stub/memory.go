package stub

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// memInterval is how often the memory sampler measures the groups of the
// attempts that have a memory limit.
const memInterval = 250 * time.Millisecond

// memSampler enforces the memory limits of all attempts of one runner:
// every memInterval it walks /proc once, sums the resident memory of each
// limited attempt's process group, remembers each group's peak and
// SIGKILLs a group above its limit.
type memSampler struct {
	r   *runner
	fs  procfs.FS
	err error // from opening /proc; memory limits are then not enforced
	log *slog.Logger
}

func newMemSampler(r *runner, log *slog.Logger) *memSampler {
	fs, err := procfs.NewDefaultFS()
	return &memSampler{r: r, fs: fs, err: err, log: log}
}

// run samples until ctx is canceled. The stub runs it in one goroutine.
func (m *memSampler) run(ctx context.Context) {
	t := time.NewTicker(memInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.sample(); err != nil && !warned {
			m.log.Warn("cannot measure jobs' memory; memory limits are not enforced", "err", err)
			warned = true
		}
	}
}

// limitedGroup is one attempt whose memory is measured.
type limitedGroup struct {
	k attemptKey
	a *attempt
}

// sample measures every limited attempt once and enforces its limit.
func (m *memSampler) sample() error {
	groups := m.r.memLimitedGroups()
	if len(groups) == 0 {
		return nil // nothing to measure: /proc is not read
	}
	if m.err != nil {
		return m.err
	}
	rss, err := groupRSS(m.fs, groups)
	if err != nil {
		return err
	}
	for pgid, g := range groups {
		m.r.checkMemory(g.k, g.a, rss[pgid])
	}
	return nil
}

// groupRSS returns the resident memory in KB of each process group in
// groups, reading /proc/<pid>/stat of every process once. A process that
// ends during the walk counts for nothing.
func groupRSS(fs procfs.FS, groups map[int]limitedGroup) (map[int]int64, error) {
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	rss := make(map[int]int64, len(groups))
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if _, ok := groups[st.PGRP]; ok {
			rss[st.PGRP] += int64(st.ResidentMemory()) / 1024
		}
	}
	return rss, nil
}

// memLimitedGroups returns the running attempts that have a memory limit,
// by process group.
func (r *runner) memLimitedGroups() map[int]limitedGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.memLimited) == 0 {
		return nil
	}
	groups := make(map[int]limitedGroup, len(r.memLimited))
	for k, a := range r.memLimited {
		groups[a.pgid] = limitedGroup{k: k, a: a}
	}
	return groups
}

// checkMemory records residentKB, the group's resident memory just
// measured, as the attempt's peak if it is one, and SIGKILLs the group at
// once when it exceeds the limit: a memory hog is given no time to grow.
// A killed attempt is measured no more.
func (r *runner) checkMemory(k attemptKey, a *attempt, residentKB int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.exited {
		return
	}
	a.peakKB = max(a.peakKB, residentKB)
	if residentKB <= a.limits.memKB {
		return
	}
	delete(r.memLimited, k)
	r.endForLimitLocked(k, a, unix.SIGKILL, memLimitReason(a.limits.memKB, residentKB))
}
