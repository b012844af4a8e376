package procinfo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FS is a mounted proc file system.
type FS struct{ root string }

// NewDefaultFS returns the proc file system at /proc, or an error if it is
// not mounted there.
func NewDefaultFS() (FS, error) { return NewFS("/proc") }

// NewFS returns the proc file system mounted at root.
func NewFS(root string) (FS, error) {
	if _, err := os.Stat(filepath.Join(root, "self")); err != nil {
		return FS{}, fmt.Errorf("open proc file system: %w", err)
	}
	return FS{root: root}, nil
}

func (fs FS) path(elem ...string) string {
	return filepath.Join(append([]string{fs.root}, elem...)...)
}

// ProcStat is what this package takes from /proc/PID/stat.
type ProcStat struct {
	PID   int
	State string // R, S, D, Z, T, ...
	PGRP  int
	RSS   int // resident pages
}

// ResidentMemory returns the resident memory in bytes.
func (s ProcStat) ResidentMemory() int { return s.RSS * os.Getpagesize() }

// Stat reads /proc/PID/stat.
func (fs FS) Stat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(fs.path(strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process stat: %w", err)
	}
	st, err := parseStat(b)
	if err != nil {
		return ProcStat{}, fmt.Errorf("read process stat of %d: %w", pid, err)
	}
	return st, nil
}

// parseStat parses a stat line: "PID (COMM) STATE PPID PGRP ...", the
// command possibly holding spaces and parentheses, so the fields after it
// start after its last ')'. RSS is field 24.
func parseStat(b []byte) (ProcStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return ProcStat{}, errors.New("malformed stat line")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return ProcStat{}, fmt.Errorf("malformed stat line: pid: %w", err)
	}
	f := strings.Fields(string(b[end+1:])) // f[0] is field 3
	if len(f) < 22 {
		return ProcStat{}, errors.New("malformed stat line: too few fields")
	}
	pgrp, err1 := strconv.Atoi(f[5-3])
	rss, err2 := strconv.Atoi(f[24-3])
	if err := errors.Join(err1, err2); err != nil {
		return ProcStat{}, fmt.Errorf("malformed stat line: %w", err)
	}
	return ProcStat{PID: pid, State: f[0], PGRP: pgrp, RSS: rss}, nil
}

// AllPIDs returns the ids of the processes /proc lists now.
func (fs FS) AllPIDs() ([]int, error) {
	d, err := os.Open(fs.root)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// MemTotalKB returns MemTotal from /proc/meminfo, in KiB.
func (fs FS) MemTotalKB() (uint64, error) {
	b, err := os.ReadFile(fs.path("meminfo"))
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read meminfo: MemTotal: %w", err)
			}
			return n, nil
		}
	}
	return 0, errors.New("read meminfo: no MemTotal")
}

// Mount is one line of the mount table.
type Mount struct {
	MountPoint string // as the kernel writes it: a space is \040
	FSType     string
}

// Mounts reads the calling process's mount table, /proc/self/mountinfo.
func (fs FS) Mounts() ([]Mount, error) {
	b, err := os.ReadFile(fs.path("self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return parseMountInfo(b)
}

// parseMountInfo parses mountinfo lines: "ID PARENT MAJ:MIN ROOT
// MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS".
func parseMountInfo(b []byte) ([]Mount, error) {
	var out []Mount
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" {
			continue
		}
		before, after, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(before), strings.Fields(after)
		if !ok || len(f) < 6 || len(g) < 1 {
			return nil, fmt.Errorf("read mountinfo: malformed line %q", line)
		}
		out = append(out, Mount{MountPoint: f[4], FSType: g[0]})
	}
	return out, nil
}

// Load1 returns the 1-minute load average from /proc/loadavg.
func (fs FS) Load1() (float64, error) {
	b, err := os.ReadFile(fs.path("loadavg"))
	if err != nil {
		return 0, fmt.Errorf("read load average: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, fmt.Errorf("read load average: malformed %q", b)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("read load average: %w", err)
	}
	return v, nil
}
