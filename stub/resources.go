package stub

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// Countable resources on the machine (see doc.go, *Resources*): the stub
// finds its GPUs with nvidia-smi and the free disk under its exec dir,
// says at start what of an instance's CPUs, GPUs and disk it can enforce,
// and gives each attempt what its Start carries.

// nvidiaSMITimeout bounds the one nvidia-smi run at start.
const nvidiaSMITimeout = 10 * time.Second

// detectGPUs runs nvidia-smi, when it is on PATH, for the machine's GPUs:
// index, type and memory. None when it is not installed; an error when it
// is and fails (a broken driver is worth a line in the log).
func detectGPUs(ctx context.Context) ([]client.GPU, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, nvidiaSMITimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil, fmt.Errorf("detect GPUs: %s: %w", path, err)
	}
	return parseNvidiaSMI(out)
}

// parseNvidiaSMI reads nvidia-smi's CSV: "0, NVIDIA A100-SXM4-40GB, 40960"
// per line.
func parseNvidiaSMI(out []byte) ([]client.GPU, error) {
	var gpus []client.GPU
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("detect GPUs: nvidia-smi line %q: want index, name, memory", line)
		}
		idx, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("detect GPUs: nvidia-smi line %q: bad index", line)
		}
		mem, _ := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64) // "[N/A]" is unknown
		gpus = append(gpus, client.GPU{Index: idx, Type: gpuType(f[1]), MemoryMB: mem})
	}
	slices.SortFunc(gpus, func(a, b client.GPU) int { return a.Index - b.Index })
	return gpus, nil
}

// gpuType turns nvidia-smi's name into the short type --gpus TYPE:N
// names: the vendor and family words dropped, lower case, the model up to
// its first '-' ("NVIDIA A100-SXM4-40GB" is a100, "Tesla T4" t4, "NVIDIA
// GeForce RTX 3090" rtx3090). A site that wants other names declares its
// GPUs in the init file instead (gpus={a100=4}).
func gpuType(name string) string {
	var words []string
	for w := range strings.FieldsSeq(strings.ToLower(name)) {
		switch w {
		case "nvidia", "tesla", "geforce", "quadro":
			continue
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		return ""
	}
	t, _, _ := strings.Cut(words[0], "-")
	if len(words) > 1 && strings.Trim(t, "abcdefghijklmnopqrstuvwxyz") == "" {
		n, _, _ := strings.Cut(words[1], "-")
		t += n // "rtx" "3090"
	}
	return t
}

// freeDiskMB is the free space, in MB, of the file system holding dir
// (or its nearest existing parent).
func freeDiskMB(dir string) int64 {
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil {
			return int64(st.Bavail) * int64(st.Bsize) >> 20
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0
		}
		dir = parent
	}
}

// unenforcedGPUs is what the stub says of a machine with GPUs where it
// can fence them neither through a cgroup v1 devices hierarchy nor with
// an eBPF device program (not root, no cgroup v2 tree, an old kernel): it
// sets the environment, it does not fence the devices.
const unenforcedGPUs = "gpus: other GPUs are not hidden from a job's processes (no cgroup v1 devices hierarchy, and no eBPF device program on a cgroup v2 tree: the stub's log says why); CUDA_VISIBLE_DEVICES and NETMGR_GPUS name the GPUs given"

// enforcement enables the cpu and cpuset controllers for the jobs'
// cgroups under base (the v2 tree) where the tree lets it, finds a cgroup
// v1 hierarchy for each controller the v2 tree lacks (cpu, cpuset) and
// for devices (which v2 offers only to eBPF programs), and returns what
// the stub enforces and how. cgroupWhy is why jobs have no v2 cgroup,
// when base is ""; parent is Config.CgroupParent: NoCgroups uses no v1
// hierarchy either.
func enforcement(parent, base, cgroupWhy, dataDir string) enforcementPlan {
	var p enforcementPlan
	if parent == NoCgroups {
		p.unenforced = []string{"cpus: no cgroups (" + cgroupWhy + "); --cpus is counted at placement only"}
		return p
	}
	var have []string
	if base != "" {
		enableControllers(base, "cpu", "cpuset")
		have = readControllers(base)
	}
	want := []string{"devices"}
	for _, c := range []string{"cpu", "cpuset"} {
		if !slices.Contains(have, c) {
			want = append(want, c)
		}
	}
	p.v1, p.v1Why = detectCgroupsV1(dataDir, want...)
	v2why := "the cgroup v2 tree offers no cpu controller"
	if base == "" {
		v2why = "no cgroup v2 tree (" + cgroupWhy + ")"
	}
	switch {
	case slices.Contains(have, "cpu"):
		p.enforced = append(p.enforced, "cpus: cpu.max in the cgroup v2 tree")
	case p.hasController("cpu"):
		p.enforced = append(p.enforced, "cpus: cpu.cfs_quota_us in the cgroup v1 cpu hierarchy")
	default:
		p.unenforced = append(p.unenforced, "cpus: "+v2why+" nor a cgroup v1 cpu hierarchy; --cpus is counted at placement only")
	}
	switch {
	case slices.Contains(have, "cpuset"):
		p.enforced = append(p.enforced, "exclusive cpus: cpuset.cpus in the cgroup v2 tree")
	case p.hasController("cpuset"):
		p.enforced = append(p.enforced, "exclusive cpus: cpuset.cpus in the cgroup v1 cpuset hierarchy")
	default:
		p.unenforced = append(p.unenforced, "exclusive cpus: no cpuset controller in the cgroup v2 tree nor a cgroup v1 cpuset hierarchy; --exclusive-cpus is counted at placement only")
	}
	p.fenceGPUs(base)
	p.enforced = append(p.enforced, "memory: the supervisor samples the job's resident memory and kills it past --memory")
	return p
}

// fenceGPUs decides how the supervisor fences a job's GPUs: through the
// plan's v1 devices hierarchy, else with an eBPF device program on the
// job's cgroup v2 (under base) where this kernel loads one.
func (p *enforcementPlan) fenceGPUs(base string) {
	switch {
	case p.hasController("devices"):
		p.gpusFenced = true
		p.enforced = append(p.enforced, "gpus: the cgroup v1 devices hierarchy denies a job the GPUs (char 195:N) not given to it")
	case base == "":
	default:
		if err := supervisor.CheckGPUFence(); err != nil {
			p.v1Why = append(p.v1Why, "no eBPF device program for the cgroup v2 tree: "+err.Error())
			break
		}
		p.gpusFenced = true
		p.bpfGPUs = true
		p.enforced = append(p.enforced, "gpus: an eBPF device program on each job's cgroup v2 denies it the GPUs (char 195:N) not given to it")
	}
}

// hasGPUs reports whether the init file declares GPUs (gpus=N or
// gpus={TYPE=N}).
func hasGPUs(attrs map[string]float64) bool {
	for name, n := range attrs {
		if (name == "gpus" || strings.HasPrefix(name, "gpus.")) && n > 0 {
			return true
		}
	}
	return false
}

// enableControllers writes +NAME to the cgroup.subtree_control of base's
// parent (netmgr), then of base, so that the jobs' cgroups get the
// controllers; a write the kernel refuses (the controller is not offered
// from above) is left at that.
func enableControllers(base string, names ...string) {
	for _, dir := range []string{filepath.Dir(base), base} {
		for _, n := range names {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+n), 0)
		}
	}
}

// readControllers lists the controllers enabled for base's children.
func readControllers(base string) []string {
	b, err := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// gpuEnviron replaces, in env, CUDA_VISIBLE_DEVICES and NETMGR_GPUS by the
// GPUs of the Start: exactly those indices, comma-separated. On a machine
// with GPUs (hasGPUs) a job given none gets both empty, which CUDA reads
// as no device; elsewhere it keeps what it set.
func gpuEnviron(env []string, gpus []int, hasGPUs bool) []string {
	if len(gpus) == 0 && !hasGPUs {
		return env
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") || strings.HasPrefix(kv, "NETMGR_GPUS=")
	})
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = strconv.Itoa(g)
	}
	list := strings.Join(ids, ",")
	return append(env, "CUDA_VISIBLE_DEVICES="+list, "NETMGR_GPUS="+list)
}

// pickCPUs chooses n CPUs of the machine for an exclusive attempt, the
// lowest not held by another running attempt of this stub (r.mu held);
// nil when fewer are free.
func (r *runner) pickCPUs(n int) []int {
	used := map[int]bool{}
	for _, a := range r.attempts {
		if !a.exited {
			for _, c := range a.cpus {
				used[c] = true
			}
		}
	}
	var out []int
	for c := 0; c < runtime.NumCPU() && len(out) < n; c++ {
		if !used[c] {
			out = append(out, c)
		}
	}
	if len(out) < n {
		return nil
	}
	return out
}

// cpuList writes CPUs as cpuset.cpus reads them: "0,1,4".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
