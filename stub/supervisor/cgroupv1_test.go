package supervisor

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// v1TestDirs returns, for each of controllers, a fresh directory under
// the test process's own cgroup in that controller's v1 hierarchy, as the
// stub names an attempt's; it skips where this host has none or the test
// is not root.
func v1TestDirs(t *testing.T, controllers ...string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroup v1 directories need root")
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, c := range controllers {
		path := ""
		for line := range strings.SplitSeq(string(own), "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+c+",") {
				path = parts[2]
			}
		}
		mount := filepath.Join("/sys/fs/cgroup", c)
		if _, err := os.Stat(filepath.Join(mount, "tasks")); err != nil || path == "" {
			t.Skipf("no cgroup v1 %s hierarchy at %s (a hybrid host has one)", c, mount)
		}
		dirs = append(dirs, filepath.Join(mount, path, "netmgr-test."+strconv.Itoa(os.Getpid())+"."+strings.ReplaceAll(t.Name(), "/", "_")))
	}
	return dirs
}

// TestCgroupsV1EnforceCPUsAndGPUs: on a hybrid host, an attempt's v1
// cgroups say its 2 CPUs (cpu.cfs_quota_us = 2 × cpu.cfs_period_us) and
// its exclusive CPU, which is all its process may run on; its process
// starts in all three; of two GPU device
// nodes made with mknod (char 195:0 and 195:1, no driver behind them),
// a job given GPU 1 opens nvidia1 as far as the missing driver (ENXIO)
// and is refused nvidia0 by the devices cgroup (EPERM). The supervisor's
// own threads are left outside, and the directories are removed.
func TestCgroupsV1EnforceCPUsAndGPUs(t *testing.T) {
	dirs := v1TestDirs(t, "cpu", "cpuset", "devices")
	nodes := t.TempDir()
	for m := range 2 {
		if err := unix.Mknod(filepath.Join(nodes, "nvidia"+strconv.Itoa(m)), unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, uint32(m)))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	}
	spec := Spec{CgroupsV1: dirs, CPUs: 2, CPUSet: "0", FenceGPUs: true, GPUs: []int{1}}
	cg, err := createCgroupsV1(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.remove() })
	for file, want := range map[string]string{
		filepath.Join(dirs[0], "cpu.cfs_period_us"): "100000",
		filepath.Join(dirs[0], "cpu.cfs_quota_us"):  "200000",
		filepath.Join(dirs[1], "cpuset.cpus"):       "0",
	} {
		if got, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q (%v), want %q", file, got, err, want)
		}
	}
	script := `cat /proc/self/cgroup; grep Cpus_allowed_list /proc/self/status; for n in 0 1; do cat ` + nodes + `/nvidia$n 2>&1 || true; done`
	cmd := exec.Command("/bin/sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cg.start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("job: %v\n%s", err, out.String())
	}
	got := out.String()
	for i, c := range []string{"cpu", "cpuset", "devices"} {
		rel := dirs[i][len(filepath.Join("/sys/fs/cgroup", c)):]
		if !strings.Contains(got, ":"+rel+"\n") {
			t.Errorf("the job is not in its %s cgroup %s:\n%s", c, rel, got)
		}
	}
	if !strings.Contains(got, "Cpus_allowed_list:\t0\n") {
		t.Errorf("the job may run on other CPUs than its exclusive CPU 0:\n%s", got)
	}
	if !strings.Contains(got, "nvidia0: Operation not permitted") {
		t.Errorf("the job opened GPU 0, not given to it, or failed otherwise than EPERM:\n%s", got)
	}
	if !strings.Contains(got, "nvidia1: No such device or address") {
		t.Errorf("the job was refused GPU 1, given to it (want ENXIO from the missing driver):\n%s", got)
	}
	if err := cg.removeBy(time.Now().Add(10 * time.Second)); err != nil {
		t.Errorf("the job's v1 cgroups are not removable once it ended (a supervisor thread stayed in?): %v", err)
	}
}

// TestCgroupsV1NoFenceWithoutGPUs: without FenceGPUs the devices cgroup
// denies nothing, and without CPUs the quota stays unlimited.
func TestCgroupsV1NoFenceWithoutGPUs(t *testing.T) {
	dirs := v1TestDirs(t, "cpu", "devices")
	cg, err := createCgroupsV1(Spec{CgroupsV1: dirs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.remove() })
	if got, _ := os.ReadFile(filepath.Join(dirs[0], "cpu.cfs_quota_us")); strings.TrimSpace(string(got)) != "-1" {
		t.Errorf("cpu.cfs_quota_us = %q, want -1 (no limit)", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dirs[1], "devices.list")); strings.TrimSpace(string(got)) != "a *:* rwm" {
		t.Errorf("devices.list = %q, want everything allowed", got)
	}
}

// TestKillLeftoversOfV1Cgroups: after a supervisor died, what is left in
// a lost attempt's v1 cgroups (no v2 cgroup) is killed, and the
// directories are removed.
func TestKillLeftoversOfV1Cgroups(t *testing.T) {
	dirs := v1TestDirs(t, "cpu", "devices")
	cg, err := createCgroupsV1(Spec{CgroupsV1: dirs, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.remove() })
	cmd := exec.Command("/bin/sleep", "600")
	if err := cg.start(cmd); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	dir := t.TempDir()
	if err := writeJSONFile(filepath.Join(dir, stateFile), attemptState{CgroupsV1: dirs}); err != nil {
		t.Fatal(err)
	}
	killed := killLeftovers(dir, slog.New(slog.DiscardHandler))
	if len(killed) != 1 || killed[0].PID != cmd.Process.Pid {
		t.Errorf("killed %+v, want the sleep %d", killed, cmd.Process.Pid)
	}
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("the lost attempt's process survived")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s is left", d)
		}
	}
}

// TestGPUFenceBPF: on a cgroup v2 cgroup (the unified tree of this host,
// or /sys/fs/cgroup), the eBPF device program lets a job given GPU 1
// open its node as far as the missing driver (ENXIO) and refuses it GPU
// 0 (EPERM), with no v1 devices cgroup involved.
func TestGPUFenceBPF(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading a device program needs root")
	}
	if err := CheckGPUFence(); err != nil {
		t.Skipf("this kernel does not load the device program: %v", err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var rel string
	for line := range strings.SplitSeq(string(own), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	mount := "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(mount, "cgroup.procs")); err != nil {
		mount = "/sys/fs/cgroup"
	}
	dir := filepath.Join(mount, rel, "netmgr-test."+strconv.Itoa(os.Getpid())+".bpf")
	cg, fd, err := createCgroup(dir)
	if err != nil {
		t.Skipf("no writable cgroup v2 directory: %v", err)
	}
	defer fd.Close()
	t.Cleanup(func() { _ = cg.remove() })
	nodes := t.TempDir()
	for m := range 2 {
		if err := unix.Mknod(filepath.Join(nodes, "nvidia"+strconv.Itoa(m)), unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, uint32(m)))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	}
	if err := fenceGPUsBPF(int(fd.Fd()), []int{1}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `for n in 0 1; do cat `+nodes+`/nvidia$n 2>&1 || true; done; cat /dev/null && echo null-ok`)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("job: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"nvidia0: Operation not permitted", "nvidia1: No such device or address", "null-ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("the job's output lacks %q:\n%s", want, got)
		}
	}
}
