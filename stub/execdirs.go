package stub

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/beneath"
	"golang.org/x/sys/unix"
)

// Exec dirs: an attempt runs in <ExecDir>/<cluster>/<job>.<instance>.<attempt>,
// <cluster> the id of the cluster's CA (pki.Material.ClusterID), so that
// two clusters sharing an ExecDir, or a cluster made anew with job ids
// starting again at 1, never write into each other's directories. A
// directory is made only where none exists (mkdir, and rename with
// RENAME_NOREPLACE for one made ahead): should one exist all the same (an
// insecure cluster beside another, a cluster made anew on the same CA),
// the Start fails as the machine's fault and the servers try again with
// the next attempt number, and the directory found is never touched.
//
// The stub removes the exec dirs it made, and only those: once an
// attempt's end is recorded and its CHILD_TERM answered by a server, the
// directory is kept for the exec retention (Config.ExecRetention) after
// the end and then removed. The attempt records in the outbox say which
// directory is whose and when it ended, so a later stub on the same
// DataDir goes on removing them.

// DefaultExecRetention is how long an ended attempt's exec dir is kept
// when Config.ExecRetention is zero.
const DefaultExecRetention = 24 * time.Hour

// insecureClusterID names the exec dirs' directory of a stub without TLS,
// which knows no CA to name its cluster by.
const insecureClusterID = "insecure"

// errExecDirExists means an attempt's exec dir existed before the stub
// made it: it is not this attempt's, and is neither written nor removed.
var errExecDirExists = errors.New("exec dir exists already (another cluster's, or an earlier one's with the same job ids): refusing to reuse it")

// clusterID names the directory in ExecDir of the cluster's attempts.
func (c Config) clusterID() string {
	if c.TLS == nil {
		return insecureClusterID
	}
	return c.TLS.ClusterID()
}

// attemptDir is the exec dir of attempt k.
func (r *runner) attemptDir(k client.AttemptRef) string {
	return filepath.Join(r.clusterDir, k.String())
}

// execSweeper removes ended attempts' exec dirs after the retention and
// measures the space the exec dir takes.
type execSweeper struct {
	r         *runner
	retention time.Duration
	every     time.Duration
	now       func() time.Time

	used   atomic.Int64 // bytes under the exec dir at the last look
	kept   atomic.Int64 // attempt dirs of this stub not removed yet
	sweeps atomic.Int64 // sweeps done, for tests
	// report, when set, gets the used bytes after every sweep (the
	// gossip metadata, which netstatus -m shows).
	report func(used int64)
}

// newExecSweeper returns a sweeper of r's exec dirs, which looks every
// min(retention/4, 1m), and at least every 10 ms.
func newExecSweeper(r *runner, retention time.Duration) *execSweeper {
	if retention <= 0 {
		retention = DefaultExecRetention
	}
	every := min(retention/4, time.Minute)
	every = max(every, 10*time.Millisecond)
	return &execSweeper{r: r, retention: retention, every: every, now: time.Now}
}

// run sweeps at once (a new stub goes on with an earlier one's
// directories) and then every s.every until ctx ends.
func (s *execSweeper) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		s.sweep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep removes the exec dirs due, then measures the exec dir.
func (s *execSweeper) sweep() {
	now := s.now()
	type due struct {
		k client.AttemptRef
		a *attempt
	}
	var dues []due
	kept := int64(0)
	s.r.mu.Lock()
	for k, a := range s.r.attempts {
		if a.rec.ExecDir == "" || a.rec.Removed {
			continue
		}
		kept++
		if a.rec.Ended && !a.rec.EndedAt.IsZero() && now.Sub(a.rec.EndedAt) >= s.retention {
			dues = append(dues, due{k, a})
		}
	}
	s.r.mu.Unlock()
	for _, d := range dues {
		if s.r.out.HasUnsent(d.k) {
			continue // its end is not committed yet
		}
		if s.remove(d.k, d.a) {
			kept--
		}
	}
	s.kept.Store(kept)
	used := diskUsed(s.r.execDir)
	s.used.Store(used)
	if s.report != nil {
		s.report(used)
	}
	s.sweeps.Add(1)
}

// remove removes the exec dir of attempt k and records that it did.
func (s *execSweeper) remove(k client.AttemptRef, a *attempt) bool {
	s.r.mu.Lock()
	rec := a.rec
	s.r.mu.Unlock()
	if err := removeExecDir(rec.ExecDir); err != nil {
		s.r.log.Warn("remove an ended attempt's exec dir", "attempt", k, "dir", rec.ExecDir, "err", err)
		return false
	}
	rec.Removed = true
	if err := s.r.out.Record(k, &rec); err != nil {
		s.r.log.Warn("record an exec dir's removal", "attempt", k, "err", err)
		return false // removed again, harmlessly, next time
	}
	s.r.mu.Lock()
	a.rec = rec
	s.r.mu.Unlock()
	s.r.log.Debug("removed an ended attempt's exec dir", "attempt", k, "dir", rec.ExecDir)
	return true
}

// removeExecDir removes an exec dir and all in it. A job may have
// taken the permissions from its own directories (chmod 000): root
// removes them anyway; a stub not run as root first gives its
// directories back their owner's rights, through beneath (no link
// followed), and tries again. os.RemoveAll itself follows no link.
func removeExecDir(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	d, oerr := beneath.Open(dir)
	if oerr != nil {
		return err
	}
	_ = d.WalkDir(".", func(p string, e fs.DirEntry, werr error) error {
		if werr == nil && e.IsDir() {
			_ = d.ChmodDir(p, 0o700) // before the walk lists it
		}
		return nil
	})
	d.Close()
	return os.RemoveAll(dir)
}

// diskUsed is the space the files under dir take, as du counts it
// (allocated blocks), ignoring what vanishes while it looks. The exec
// dirs under it are the jobs', so it walks through beneath: no link is
// followed, and it goes no deeper than beneath.MaxDepth.
func diskUsed(dir string) int64 {
	d, err := beneath.Open(dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	var total int64
	_ = d.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), kitPrefix) {
			return filepath.SkipDir
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		total += blocksOf(info)
		return nil
	})
	return total
}

// blocksOf is the space a file takes: its allocated blocks, or its size
// where the system does not say.
func blocksOf(info fs.FileInfo) int64 {
	switch st := info.Sys().(type) {
	case *syscall.Stat_t:
		return int64(st.Blocks) * 512
	case *unix.Stat_t:
		return st.Blocks * 512
	}
	return info.Size()
}

// closedToOthers returns the first directory on the way from / down to
// dir (dir included) that does not let other users search it (no o+x),
// or "" when every one does or dir cannot be read. Jobs run as their
// owners: below such a directory (an exec dir inside the stub's own 0700
// data dir, say) a job of anyone but the directory's owner fails to start
// with "fork/exec ...: permission denied". New warns of it at start.
func closedToOthers(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	var walk []string
	for d := dir; ; d = filepath.Dir(d) {
		walk = append(walk, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(walk) - 1; i >= 0; i-- {
		fi, err := os.Stat(walk[i])
		if err != nil {
			return ""
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return walk[i]
		}
	}
	return ""
}
