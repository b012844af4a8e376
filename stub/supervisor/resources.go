package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cpuPeriod is the cpu.max period, in microseconds: the kernel's default.
const cpuPeriod = 100000

// limitCPUs writes the job's CPU limit to its cgroup: cpu.max allows
// cpus CPUs' worth of time per period; cpuset, when set, pins it to those
// CPUs (cpuset.cpus). A cgroup without the controller lacks the file: the
// error says so, and the job runs without that limit.
func (c *jobCgroup) limitCPUs(cpus int, cpuset string) error {
	var errs []error
	if cpus > 0 {
		v := strconv.Itoa(cpus*cpuPeriod) + " " + strconv.Itoa(cpuPeriod)
		if err := os.WriteFile(filepath.Join(c.dir, "cpu.max"), []byte(v), 0); err != nil {
			errs = append(errs, fmt.Errorf("write cpu.max: %w", err))
		}
	}
	if cpuset != "" {
		if err := os.WriteFile(filepath.Join(c.dir, "cpuset.cpus"), []byte(cpuset), 0); err != nil {
			errs = append(errs, fmt.Errorf("write cpuset.cpus: %w", err))
		}
	}
	return errors.Join(errs...)
}

// diskInterval is how often a supervisor measures the exec dir of a job
// that has a disk limit: a walk of the directory, dearer than a memory
// reading.
const diskInterval = time.Second

// maxDiskEntries bounds one walk: a job that makes more files than this
// is measured by the first ones, which already exceed any sane limit.
const maxDiskEntries = 1 << 20

// errTooMany stops a walk at maxDiskEntries.
var errTooMany = errors.New("too many entries")

// dirKB is the space the files under dir take, in KB: the blocks of each
// entry, found with lstat (WalkDir follows no link, opens no file but
// directories, and so never blocks on a FIFO or device a job made).
func dirKB(dir string) (int64, error) {
	var blocks int64
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: counts for nothing
		}
		if n++; n > maxDiskEntries {
			return errTooMany
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			blocks += st.Blocks
		}
		return nil
	})
	if err != nil && !errors.Is(err, errTooMany) {
		return 0, fmt.Errorf("measure exec dir: %w", err)
	}
	return blocks / 2, nil // 512-byte blocks
}

// diskLimitReason is the CHILD_TERM Reason of an attempt ended by its
// disk limit, e.g. "disk: disk limit of 100 MB exceeded (exec dir 130 MB)".
func diskLimitReason(limitKB, usedKB int64) string {
	return fmt.Sprintf("%s: disk limit of %d MB exceeded (exec dir %d MB)", ReasonDisk, limitKB/1024, (usedKB+1023)/1024)
}

// enforceDiskLimit measures the job's exec dir every diskInterval and
// SIGKILLs the job once it takes more than its limit.
func (s *attempt) enforceDiskLimit() {
	t := time.NewTicker(diskInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.exited:
			return
		}
		kb, err := dirKB(s.spec.Dir)
		if err != nil {
			s.log.Warn("cannot measure the job's exec dir; its disk limit is not enforced", "err", err)
			return
		}
		if kb > s.lim.diskKB {
			s.endForLimit(unix.SIGKILL, diskLimitReason(s.lim.diskKB, kb))
			return
		}
	}
}
