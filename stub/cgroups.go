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
