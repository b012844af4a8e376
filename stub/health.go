package stub

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// defaultDiskCheckEvery is how often the stub looks at the free space and
// inodes of its directories: a statfs each, every few seconds, never one
// per Start.
const defaultDiskCheckEvery = 5 * time.Second

// healthWatch watches what the stub needs of its machine to run jobs:
// free space and inodes in the exec dir and the data dir (above the
// Config's thresholds), an exec dir that takes new attempts' directories
// and files, and, when the site has one, its health-check program. Its
// problem, the first of those that fails, drains the machine: lease
// renewals carry it to the leader, which places nothing there while it
// lasts, and a Start that comes meanwhile fails as a machine fault, which
// the servers queue again without counting (runner_start.go). It clears
// by itself once the fault does. Safe for concurrent use.
type healthWatch struct {
	execDir, dataDir string
	minDisk          Threshold
	minInodes        Threshold
	program          string        // the health-check program; "" for none
	programEvery     time.Duration // how often it runs
	diskEvery        time.Duration // how often the disks are looked at
	log              *slog.Logger

	// current is the problem now, "" when healthy: what problem returns,
	// read without a lock by every Start.
	current atomic.Pointer[string]

	mu        sync.Mutex // guards the fields below and the updates of current
	disk      string     // the last statfs's problem: "exec dir full: 0 B free"
	create    string     // a failure to make an attempt's files, until a probe succeeds
	check     string     // the health-check program's problem
	script    string     // a failed prologue's or epilogue's, until a reload
	execFree  uint64     // bytes free in the exec dir at the last look
	dataFree  uint64     // bytes free in the data dir at the last look
	lastNoted string     // the problem last logged
}

// newHealthWatch returns the watch the Config describes, having looked at
// the disks once: the first lease renewal already says what they hold.
func newHealthWatch(cfg Config, log *slog.Logger) *healthWatch {
	h := &healthWatch{
		execDir:      cfg.ExecDir,
		dataDir:      cfg.DataDir,
		minDisk:      cfg.MinFreeDisk.or(DefaultMinFreeDisk),
		minInodes:    cfg.MinFreeInodes.or(DefaultMinFreeInodes),
		program:      cfg.HealthCheck,
		programEvery: cmpOr(cfg.HealthCheckEvery, DefaultHealthCheckEvery),
		diskEvery:    cmpOr(cfg.DiskCheckEvery, defaultDiskCheckEvery),
		log:          log,
	}
	h.current.Store(new(string))
	h.checkDisks()
	return h
}

// cmpOr is d, or def when d is not positive.
func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// problem is why the machine should take no new work now; "" when it is
// healthy, or when h is nil (a runner without a watch, in tests). It
// does not block.
func (h *healthWatch) problem() string {
	if h == nil {
		return ""
	}
	return *h.current.Load()
}

// run looks at the disks every diskEvery (and, while an attempt's files
// could not be made, tries making some) until ctx ends.
func (h *healthWatch) run(ctx context.Context) {
	tick := time.NewTicker(h.diskEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		h.checkDisks()
		h.probeCreate()
	}
}

// recheck looks at the disks now and returns the problem: for an attempt
// that failed, whose failure may be the machine's (a job whose output
// cannot be written exits 1). Only failed attempts pay for the statfs.
func (h *healthWatch) recheck() string {
	if h == nil {
		return ""
	}
	h.checkDisks()
	return h.problem()
}

// checkDisks looks at the free space and inodes of the exec dir, then of
// the data dir, and records the first problem.
func (h *healthWatch) checkDisks() {
	problem, execFree := h.checkDir("exec dir", h.execDir)
	dataProblem, dataFree := h.checkDir("data dir", h.dataDir)
	if problem == "" {
		problem = dataProblem
	}
	h.mu.Lock()
	h.disk, h.execFree, h.dataFree = problem, execFree, dataFree
	h.updateLocked()
	h.mu.Unlock()
}

// checkDir returns the problem of the file system holding dir, named
// what, and its free bytes (for an unprivileged user: jobs may run as
// one).
func (h *healthWatch) checkDir(what, dir string) (string, uint64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Sprintf("%s unusable: %v", what, err), 0
	}
	bsize := uint64(st.Bsize)
	free, total := st.Bavail*bsize, st.Blocks*bsize
	if limit := h.minDisk.min(total); free < limit || (free == 0 && total > 0 && !h.minDisk.Off) {
		if free == 0 {
			return what + " full: 0 B free", free
		}
		return fmt.Sprintf("%s full: %s free, under the minimum of %s", what, formatBytes(free), formatBytes(limit)), free
	}
	if st.Files > 0 { // some file systems (btrfs) report no inode counts
		if limit := h.minInodes.min(st.Files); st.Ffree < limit || (st.Ffree == 0 && !h.minInodes.Off) {
			if st.Ffree == 0 {
				return what + " out of inodes: 0 free", free
			}
			return fmt.Sprintf("%s out of inodes: %d free, under the minimum of %d", what, st.Ffree, limit), free
		}
	}
	return "", free
}

// createFailed records that an attempt's directory or output files could
// not be made in the exec dir: the machine takes no new work until making
// some works again (probeCreate).
func (h *healthWatch) createFailed(err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.create = "cannot make attempt files in the exec dir: " + err.Error()
	h.updateLocked()
	h.mu.Unlock()
}

// probeCreate, while an attempt's files could not be made, tries to make
// a directory with a file in the exec dir, as a Start does, and clears
// the problem once it can.
func (h *healthWatch) probeCreate() {
	h.mu.Lock()
	failing := h.create != ""
	h.mu.Unlock()
	if !failing {
		return
	}
	dir, err := os.MkdirTemp(h.execDir, kitPrefix+"probe-")
	if err == nil {
		var f *os.File
		if f, err = os.Create(filepath.Join(dir, "stdout")); err == nil {
			_ = f.Close()
		}
		_ = os.RemoveAll(dir)
	}
	if err != nil {
		return
	}
	h.mu.Lock()
	h.create = ""
	h.updateLocked()
	h.mu.Unlock()
}

// setCheck records the health-check program's problem, "" when it passed.
func (h *healthWatch) setCheck(problem string) {
	h.mu.Lock()
	h.check = problem
	h.updateLocked()
	h.mu.Unlock()
}

// scriptFailed records that the prologue or epilogue failed: the machine
// takes no new work until the stub reloads (SIGHUP) or restarts, once an
// admin has seen to it, as a Slurm node drained by its Prolog waits for
// scontrol update state=resume.
func (h *healthWatch) scriptFailed(problem string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.script = problem
	h.updateLocked()
	h.mu.Unlock()
}

// clearScript forgets a failed prologue's or epilogue's problem, and
// returns it ("" when there was none).
func (h *healthWatch) clearScript() string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.script
	h.script = ""
	h.updateLocked()
	return was
}

// updateLocked works out the problem from its sources, the disks first,
// and logs a change. The caller holds mu.
func (h *healthWatch) updateLocked() {
	p := h.disk
	for _, q := range []string{h.create, h.check, h.script} {
		if p == "" {
			p = q
		}
	}
	if p == *h.current.Load() {
		return
	}
	h.current.Store(&p)
	switch {
	case p != "" && p != h.lastNoted:
		h.log.Warn("machine unhealthy: taking no new work", "problem", p)
	case p == "":
		h.log.Info("machine healthy again: taking new work")
	}
	h.lastNoted = p
}

// free returns the bytes free in the exec dir and the data dir at the
// last look, for the metrics.
func (h *healthWatch) free() (execDir, dataDir uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.execFree, h.dataFree
}

// describe says what the watch checks, for the log at start.
func (h *healthWatch) describe() []any {
	check := "none"
	if h.program != "" {
		check = h.program + " every " + h.programEvery.String()
	}
	return []any{"min_free_disk", h.minDisk.format(true), "min_free_inodes", h.minInodes.format(false),
		"health_check", check, "disk_check_every", strconv.Quote(h.diskEvery.String())}
}
