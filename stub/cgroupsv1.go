package stub

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// cgroupV1 is a cgroup v1 hierarchy the stub uses for one controller.
type cgroupV1 struct {
	controller string // cpu, cpuset or devices
	base       string // <mount><own cgroup>/netmgr/<stub>: the jobs' directories go under it
}

// detectCgroupsV1 finds, for each of controllers, a mounted cgroup v1
// hierarchy with it (a hybrid host: /sys/fs/cgroup/cpu and the rest beside
// an empty cgroup2) and makes the stub's directory in it, as detectCgroups
// does in the v2 tree: <mount><the stub's cgroup>/netmgr/<stub>. A
// controller without a writable hierarchy is left out, with why.
func detectCgroupsV1(dataDir string, controllers ...string) ([]cgroupV1, []string) {
	mounts, err := cgroupV1Mounts()
	if err != nil {
		return nil, []string{err.Error()}
	}
	own, err := ownCgroupsV1()
	if err != nil {
		return nil, []string{err.Error()}
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, []string{fmt.Sprintf("data dir: %v", err)}
	}
	sum := sha256.Sum256([]byte(abs))
	var out []cgroupV1
	var why []string
	for _, c := range controllers {
		m, ok := mounts[c]
		if !ok {
			why = append(why, "no cgroup v1 hierarchy has the "+c+" controller")
			continue
		}
		rel, ok := strings.CutPrefix(own[c], m.root)
		if !ok {
			why = append(why, fmt.Sprintf("the stub's %s cgroup %s is outside its mount", c, own[c]))
			continue
		}
		base := filepath.Join(m.dir, rel, cgroupDirName, fmt.Sprintf("%x", sum[:4]))
		if err := mkdirV1(base, c == "cpuset"); err != nil {
			why = append(why, fmt.Sprintf("cgroup v1 %s tree is not writable: %v", c, err))
			continue
		}
		out = append(out, cgroupV1{controller: c, base: base})
	}
	return out, why
}

// mkdirV1 makes dir and its missing parents; in a cpuset hierarchy each
// new directory gets its parent's CPUs and memory nodes, without which it
// takes no process.
func mkdirV1(dir string, cpuset bool) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := mkdirV1(parent, cpuset); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make cgroup: %w", err)
	}
	if cpuset {
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil {
				return fmt.Errorf("make cpuset cgroup: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.TrimSpace(string(b))), 0); err != nil {
				return fmt.Errorf("make cpuset cgroup: %w", err)
			}
		}
	}
	return nil
}

// v1Mount is where a cgroup v1 hierarchy is mounted and its root.
type v1Mount struct{ dir, root string }

// cgroupV1Mounts maps each controller of a mounted cgroup v1 hierarchy to
// its mount, from /proc/self/mountinfo.
func cgroupV1Mounts() (map[string]v1Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("find cgroup v1 mounts: %w", err)
	}
	defer f.Close()
	out := map[string]v1Mount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, opts := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(opts) < 3 || opts[0] != "cgroup" {
			continue
		}
		for o := range strings.SplitSeq(opts[2], ",") {
			if _, seen := out[o]; !seen {
				out[o] = v1Mount{dir: fields[4], root: fields[3]}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("find cgroup v1 mounts: %w", err)
	}
	return out, nil
}

// ownCgroupsV1 maps each v1 controller to the stub's cgroup in it, from
// /proc/self/cgroup ("4:memory:/a/b", "1:cpu,cpuacct:/").
func ownCgroupsV1() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// enforcementPlan is what the stub enforces of an instance's resources
// on its machine and how.
type enforcementPlan struct {
	// v1 are the cgroup v1 hierarchies each attempt gets a directory in;
	// v1Why says why a wanted one (or the eBPF device program) is
	// missing, for the log.
	v1    []cgroupV1
	v1Why []string
	// gpusFenced is set when the supervisor can deny a job the GPUs not
	// given to it: through a v1 devices hierarchy, or (bpfGPUs) with an
	// eBPF device program on the job's cgroup v2.
	gpusFenced, bpfGPUs bool
	// enforced and unenforced say, one line each, what is and what is
	// not enforced, for the log; unenforced goes to netstatus -m too.
	enforced, unenforced []string
}

// v1Dirs returns the attempt's directories in the plan's v1 hierarchies
// that req needs: cpu for --cpus, cpuset for --exclusive-cpus, devices
// on a machine with GPUs (gpus), so that an attempt that asks for none
// costs no v1 cgroup.
func (p enforcementPlan) v1Dirs(attempt string, req client.StartRequest, gpus bool) []string {
	var out []string
	for _, c := range p.v1 {
		switch {
		case c.controller == "cpu" && req.CPUs > 0,
			c.controller == "cpuset" && req.CPUs > 0 && req.ExclusiveCPUs,
			c.controller == "devices" && gpus:
			out = append(out, filepath.Join(c.base, attempt))
		}
	}
	return out
}

// hasController reports whether the plan enforces through the v1
// hierarchy of controller.
func (p enforcementPlan) hasController(controller string) bool {
	return slices.ContainsFunc(p.v1, func(c cgroupV1) bool { return c.controller == controller })
}
