package stub

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// NoCgroups as Config.CgroupParent makes every job run in a process group
// only, even where a writable cgroup v2 tree is offered.
const NoCgroups = "none"

// cgroupDirName is the directory the stub makes under its cgroup parent;
// each stub (each DataDir) gets its own directory under it, and each
// attempt its own cgroup under that.
const cgroupDirName = "netmgr"

// detectCgroups returns the directory under which each job of this stub
// gets its own cgroup (<parent>/netmgr/<stub>/<job>.<instance>.<attempt>),
// or "" and why jobs run in process groups instead. parent is
// Config.CgroupParent: empty means the stub's own cgroup.
//
// The <stub> level, a hash of the DataDir, keeps apart several stubs that
// share one cgroup (tests, or several stubs on a machine); it is the same
// across restarts of one stub.
func detectCgroups(parent, dataDir string) (string, string) {
	if parent == NoCgroups {
		return "", "cgroups are disabled by configuration"
	}
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err.Error()
	}
	if parent == "" {
		own, err := ownCgroup()
		if err != nil {
			return "", err.Error()
		}
		rel, ok := strings.CutPrefix(own, root)
		if !ok {
			return "", fmt.Sprintf("the stub's cgroup %s is outside the cgroup2 mount of %s", own, root)
		}
		parent = filepath.Join(mount, rel)
	}
	if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
		return "", fmt.Sprintf("%s is no cgroup v2 directory: %v", parent, err)
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Sprintf("data dir: %v", err)
	}
	sum := sha256.Sum256([]byte(abs))
	base := filepath.Join(parent, cgroupDirName, fmt.Sprintf("%x", sum[:4]))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Sprintf("cgroup tree %s is not writable: %v", parent, err)
	}
	probe := filepath.Join(base, "probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Sprintf("cannot create a cgroup under %s: %v", base, err)
	}
	if err := os.Remove(probe); err != nil {
		return "", fmt.Sprintf("cannot remove a cgroup under %s: %v", base, err)
	}
	return base, ""
}

// cgroup2Mount returns the mount point and root of the cgroup v2
// hierarchy: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a
// hybrid one.
func cgroup2Mount() (string, string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("find cgroup v2 mount: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 {
			return fields[4], fields[3], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("find cgroup v2 mount: %w", err)
	}
	return "", "", errors.New("no cgroup v2 file system is mounted")
}

// ownCgroup returns the stub's cgroup v2 path from /proc/self/cgroup.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read own cgroup: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("the stub is in no cgroup v2 cgroup")
}

// jobCgroup is the cgroup v2 directory of one job.
type jobCgroup struct {
	dir string
}

// createCgroup makes the job's cgroup and returns it with an open
// descriptor of its directory, for clone3's CLONE_INTO_CGROUP. An existing
// empty cgroup of the same name (left by a supervisor that died) is
// reused.
func createCgroup(dir string) (*jobCgroup, *os.File, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("create cgroup: %w", err)
	}
	cg := &jobCgroup{dir: dir}
	if procs, err := cg.procs(); err != nil {
		return nil, nil, err
	} else if len(procs) > 0 {
		return nil, nil, fmt.Errorf("create cgroup %s: it holds %d processes", dir, len(procs))
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
func (c *jobCgroup) residentKB(fs procfs.FS) (int64, error) {
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
		p, err := fs.Proc(pid)
		if err != nil {
			continue
		}
		if st, err := p.Stat(); err == nil {
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
