package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// On a hybrid host (cgroup v1 hierarchies for the controllers, an empty
// cgroup2 beside them) the job's CPU limit, its exclusive CPUs and its GPU
// devices are enforced through the v1 hierarchies the stub names in
// Spec.CgroupsV1, one directory each; what a directory is for is read
// from the files the kernel puts in it.

// nvidiaMajor is the character major of the nvidia GPU devices:
// /dev/nvidiaN is 195:N, nvidiactl 195:255, nvidia-modeset 195:254.
const nvidiaMajor = 195

// maxGPUMinor is the highest minor of a GPU device (/dev/nvidia0 to
// /dev/nvidia253); 254 and 255 are the control devices every CUDA
// process needs, which stay allowed, as does nvidia-uvm (a major of its
// own).
const maxGPUMinor = 253

// v1DenyMinors is how many GPU minors (0 to 63) a v1 devices cgroup
// denies one rule each: the scheduler counts at most 64 GPUs a machine
// (fsm.MaxGPUs), and each rule costs the kernel ~70 µs to take (all 254
// made a GPU attempt's start 18 ms dearer on a loaded 2-core host). A
// /dev/nvidiaN of a higher minor present on the host is denied too.
const v1DenyMinors = 64

// jobCgroupsV1 are the job's cgroup v1 directories, one per hierarchy.
type jobCgroupsV1 struct {
	dirs []string
}

// createCgroupsV1 makes the job's v1 cgroups and writes spec's limits to
// them: cpu.cfs_quota_us of spec.CPUs (cpu), cpuset.cpus of spec.CPUSet or
// the parent's CPUs and the parent's cpuset.mems (cpuset, which takes no
// process without both), and, when spec.FenceGPUs, a devices.deny of each
// GPU minor but spec.GPUs (devices; gpuMinorsToDeny). The devices controller of v1 cannot
// carve an allow out of a wildcard deny (an allow only removes a deny of
// the same device), so each other GPU gets its own deny. A directory left
// by a supervisor that died is reused when it holds no process. On error,
// what was made is removed.
func createCgroupsV1(spec Spec) (*jobCgroupsV1, error) {
	cg := &jobCgroupsV1{}
	for _, dir := range spec.CgroupsV1 {
		if err := os.Mkdir(dir, 0o755); errors.Is(err, os.ErrExist) {
			if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || len(strings.TrimSpace(string(b))) > 0 {
				_ = cg.remove()
				return nil, fmt.Errorf("create cgroup %s: it is in use or unreadable", dir)
			}
		} else if err != nil {
			_ = cg.remove()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
		if err := configureV1(dir, spec); err != nil {
			_ = cg.remove()
			return nil, err
		}
	}
	return cg, nil
}

// configureV1 writes spec's limits to the files of dir that its
// controller offers.
func configureV1(dir string, spec Spec) error {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	write := func(name, v string) error {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0); err != nil {
			return fmt.Errorf("write %s %q: %w", filepath.Join(dir, name), v, err)
		}
		return nil
	}
	switch {
	case has("cpu.cfs_quota_us"):
		if spec.CPUs > 0 {
			if err := write("cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
				return err
			}
			return write("cpu.cfs_quota_us", strconv.Itoa(spec.CPUs*cpuPeriod))
		}
	case has("cpuset.cpus"):
		parent := filepath.Dir(dir)
		cpus := spec.CPUSet
		if cpus == "" {
			b, err := os.ReadFile(filepath.Join(parent, "cpuset.cpus"))
			if err != nil {
				return fmt.Errorf("read parent cpuset: %w", err)
			}
			cpus = strings.TrimSpace(string(b))
		}
		mems, err := os.ReadFile(filepath.Join(parent, "cpuset.mems"))
		if err != nil {
			return fmt.Errorf("read parent cpuset: %w", err)
		}
		if err := write("cpuset.mems", strings.TrimSpace(string(mems))); err != nil {
			return err
		}
		return write("cpuset.cpus", cpus)
	case has("devices.deny"):
		if spec.FenceGPUs {
			for _, m := range gpuMinorsToDeny(spec.GPUs) {
				if err := write("devices.deny", "c "+strconv.Itoa(nvidiaMajor)+":"+strconv.Itoa(m)+" rwm"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// gpuMinorsToDeny returns the GPU minors a v1 devices cgroup denies a
// job given gpus: 0 to v1DenyMinors-1, and those of the host's
// /dev/nvidiaN above, but gpus.
func gpuMinorsToDeny(gpus []int) []int {
	var out []int
	for m := range v1DenyMinors {
		if !slices.Contains(gpus, m) {
			out = append(out, m)
		}
	}
	nodes, _ := filepath.Glob("/dev/nvidia[0-9]*")
	for _, n := range nodes {
		var st unix.Stat_t
		if unix.Stat(n, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != nvidiaMajor {
			continue
		}
		m := int(unix.Minor(st.Rdev))
		if m >= v1DenyMinors && m <= maxGPUMinor && !slices.Contains(gpus, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// start runs cmd.Start on a thread of its own that first joins each of
// the job's v1 cgroups (a v1 cgroup takes a single thread through its
// tasks file), so that the job's first process is in them from its first
// instruction, as clone3 puts it in its v2 cgroup. The thread is never
// handed back to the Go runtime: its goroutine ends locked to it, and
// the runtime ends the thread rather than let another goroutine run in
// the job's cgroups. The runtime keeps (wedges) the process's main thread
// instead of ending it, so the work never runs there: a goroutine that
// finds itself on it holds it and starts another. The job's parent stays
// this process (Linux hands a child to another thread of its parent's
// group when the forking thread ends); a Pdeathsig, which fires when the
// forking thread ends, would not survive this, and none is set.
func (c *jobCgroupsV1) start(cmd *exec.Cmd) error {
	if c == nil || len(c.dirs) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, but on the main thread: see above
		tid := unix.Gettid()
		if tid == unix.Getpid() {
			defer runtime.UnlockOSThread()
			errc <- c.start(cmd) // on another thread: this one is held
			return
		}
		for _, dir := range c.dirs {
			if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0); err != nil {
				errc <- fmt.Errorf("join cgroup %s: %w", dir, err)
				return
			}
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// has reports whether one of the job's v1 cgroups has the controller
// file name (cpu.cfs_quota_us, cpuset.cpus): that limit is its.
func (c *jobCgroupsV1) has(name string) bool {
	if c == nil {
		return false
	}
	for _, dir := range c.dirs {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// list returns the directories; nil for none.
func (c *jobCgroupsV1) list() []string {
	if c == nil {
		return nil
	}
	return c.dirs
}

// procs returns the pids in the job's first v1 cgroup.
func (c *jobCgroupsV1) procs() []int {
	if c == nil || len(c.dirs) == 0 {
		return nil
	}
	pids, _ := (&jobCgroup{dir: c.dirs[0]}).procs()
	return pids
}

// removeBy deletes the job's (empty) v1 cgroups, waiting up to deadline
// for the kernel to let the last reaped process go.
func (c *jobCgroupsV1) removeBy(deadline time.Time) error {
	if c == nil {
		return nil
	}
	err := c.remove()
	for err != nil && errors.Is(err, unix.EBUSY) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		err = c.remove()
	}
	return err
}

// remove deletes the job's v1 cgroups once.
func (c *jobCgroupsV1) remove() error {
	var errs []error
	for _, dir := range c.dirs {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}
