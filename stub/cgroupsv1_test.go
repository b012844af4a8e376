package stub

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// TestEnforcementPlan: on this host, each of --cpus, --exclusive-cpus
// and GPU fencing is either enforced (through the v2 tree or a v1
// hierarchy, said in the enforced lines) or said to be not enforced,
// never both; a hybrid host's v1 cpu hierarchy enforces --cpus; a stub
// with cgroups disabled uses no v1 hierarchy either; an attempt gets a
// v1 directory only for what it asks.
func TestEnforcementPlan(t *testing.T) {
	dataDir := t.TempDir()
	base, why := detectCgroups("", dataDir)
	p := enforcement("", base, why, dataDir)
	t.Cleanup(func() {
		for _, c := range p.v1 {
			_ = os.Remove(c.base)
		}
	})
	t.Logf("enforced: %q\nnot enforced: %q\nv1 left out: %q", p.enforced, p.unenforced, p.v1Why)
	for _, what := range []string{"cpus:", "exclusive cpus:"} {
		on := slices.ContainsFunc(p.enforced, func(s string) bool { return strings.HasPrefix(s, what) })
		off := slices.ContainsFunc(p.unenforced, func(s string) bool { return strings.HasPrefix(s, what) })
		if on == off {
			t.Errorf("%s enforced %v and not enforced %v: want exactly one", what, on, off)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); err == nil && os.Geteuid() == 0 {
		if !p.hasController("cpu") && !slices.Contains(readControllers(base), "cpu") {
			t.Errorf("this host has a v1 cpu hierarchy, yet --cpus is enforced by neither tree: %q", p.unenforced)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/devices/devices.deny"); err == nil && os.Geteuid() == 0 && !p.gpusFenced {
		t.Errorf("this host has a v1 devices hierarchy, yet GPUs are not fenced: %q", p.v1Why)
	}
	dirs := p.v1Dirs("j.0.1", client.StartRequest{}, false)
	if len(dirs) != 0 {
		t.Errorf("an attempt that asks for no CPUs on a machine without GPUs gets v1 directories %q", dirs)
	}
	all := p.v1Dirs("j.0.1", client.StartRequest{CPUs: 1, ExclusiveCPUs: true}, true)
	if len(all) != len(p.v1) {
		t.Errorf("an attempt asking for everything gets %q of %d hierarchies", all, len(p.v1))
	}

	if base != "" && os.Geteuid() == 0 {
		bpf := enforcementPlan{} // a pure cgroup v2 host: no v1 devices hierarchy
		bpf.fenceGPUs(base)
		if !bpf.gpusFenced || !bpf.bpfGPUs {
			t.Errorf("with a cgroup v2 tree and root, GPUs are not fenced by the eBPF program: %q", bpf.v1Why)
		}
	}

	off := enforcement(NoCgroups, "", "cgroups are disabled by configuration", dataDir)
	if len(off.v1) != 0 || off.gpusFenced {
		t.Errorf("a stub with cgroups disabled still uses v1 hierarchies: %+v", off.v1)
	}
}
