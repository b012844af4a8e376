package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/internal/procinfo"
	"golang.org/x/sys/unix"
)

// jobCgroup is the cgroup v2 directory of one job.
type jobCgroup struct {
	dir string
}

// createCgroup makes the job's cgroup and returns it with an open
// descriptor of its directory, for clone3's CLONE_INTO_CGROUP. An existing
// empty cgroup of the same name (left by a supervisor that died) is
// reused.
func createCgroup(dir string) (*jobCgroup, *os.File, error) {
	cg := &jobCgroup{dir: dir}
	// A cgroup just made holds no process: only one that was there is
	// read for leftovers (a read of cgroup.procs was a sixtieth of a
	// host's CPU per start).
	if err := os.Mkdir(dir, 0o755); errors.Is(err, os.ErrExist) {
		if procs, err := cg.procs(); err != nil {
			return nil, nil, err
		} else if len(procs) > 0 {
			return nil, nil, fmt.Errorf("create cgroup %s: it holds %d processes", dir, len(procs))
		}
	} else if err != nil {
		return nil, nil, fmt.Errorf("create cgroup: %w", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("open cgroup: %w", err)
	}
	return cg, f, nil
}

// procs returns the pids in the cgroup.
func (c *jobCgroup) procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup procs: %w", err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// signal sends sig to every process of the cgroup; SIGKILL goes through
// cgroup.kill where the kernel has it, which reaches processes forked
// meanwhile too. A pid read from cgroup.procs is safe to signal: a process
// stays in the file until it is reaped, and its pid is not reused before.
func (c *jobCgroup) signal(sig unix.Signal) error {
	if sig == unix.SIGKILL {
		err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
		if err == nil {
			return nil
		}
	}
	pids, err := c.procs()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("signal process %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// residentKB returns the cgroup's resident memory: anon + file_mapped of
// memory.stat where the memory controller is enabled (memory.current
// would count the page cache as well), else the sum of the RSS of its
// processes.
func (c *jobCgroup) residentKB(fs procinfo.FS) (int64, error) {
	if b, err := os.ReadFile(filepath.Join(c.dir, "memory.stat")); err == nil {
		var bytes int64
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, _ := strings.Cut(line, " ")
			if k == "anon" || k == "file_mapped" {
				n, _ := strconv.ParseInt(v, 10, 64)
				bytes += n
			}
		}
		return bytes / 1024, nil
	}
	pids, err := c.procs()
	if err != nil {
		return 0, err
	}
	var kb int64
	for _, pid := range pids {
		if st, err := fs.Stat(pid); err == nil {
			kb += int64(st.ResidentMemory()) / 1024
		}
	}
	return kb, nil
}

// remove deletes the (empty) cgroup.
func (c *jobCgroup) remove() error {
	if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup: %w", err)
	}
	return nil
}
