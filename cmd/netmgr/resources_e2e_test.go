package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"golang.org/x/sys/unix"
)

// stampScript prints, for an attempt of a resource test, its start and
// end (seconds since the epoch), its GPUs and its cgroup's cpu.max, or,
// on a hybrid host whose v2 tree has no cpu controller, its v1 cpu
// cgroup's cpu.cfs_quota_us and cpu.cfs_period_us in cpu.max's form
// ("none" without either), after sleeping secs seconds.
func stampScript(secs int) string {
	return `s=$(date +%s.%N); cg=$(sed -n 's/^0:://p' /proc/self/cgroup); ` +
		`c1=$(grep -E '^[0-9]+:(cpu|cpu,cpuacct|cpuacct,cpu):' /proc/self/cgroup | cut -d: -f3); ` +
		`v1() { for d in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct; do ` +
		`[ -r $d$c1/cpu.cfs_quota_us ] && echo "$(cat $d$c1/cpu.cfs_quota_us) $(cat $d$c1/cpu.cfs_period_us)" && return; done; return 1; }; ` +
		`m=$(cat /sys/fs/cgroup/unified$cg/cpu.max 2>/dev/null || cat /sys/fs/cgroup$cg/cpu.max 2>/dev/null || v1 || echo none); ` +
		`sleep ` + strconv.Itoa(secs) + `; echo "$s $(date +%s.%N) gpus=$CUDA_VISIBLE_DEVICES/$NETMGR_GPUS cpu.max=$m"`
}

// stamp is what stampScript printed for one instance.
type stamp struct {
	start, end    float64
	gpus, cpuMax  string
	job, instance string
	machine       string
}

// stamps waits until every instance of jobs is done and returns what each
// printed.
func stamps(t *testing.T, r *e2eRunner, cl *client.Client, jobs ...string) []stamp {
	t.Helper()
	ctx := context.Background()
	testwait.Until(t, 2*time.Minute, "every instance done", func() (bool, string) {
		for _, name := range jobs {
			j, err := cl.Job(ctx, name)
			if err != nil || j.State != client.JobDone {
				return false, name + " is " + j.State
			}
		}
		return true, ""
	})
	var out []stamp
	for _, name := range jobs {
		j, err := cl.Job(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range j.Instances {
			res := r.run(t, "netmgr", "logs", "--instance", strconv.Itoa(in.Index), name)
			res.wantCode(t, 0)
			f := strings.Fields(res.stdout)
			if len(f) < 4 { // cpu.max is two words: "200000 100000"
				t.Fatalf("%s instance %d printed %q, want start, end, gpus and cpu.max", name, in.Index, res.stdout)
			}
			s := stamp{job: name, instance: strconv.Itoa(in.Index), machine: in.Machine,
				gpus: strings.TrimPrefix(f[2], "gpus="), cpuMax: strings.TrimPrefix(strings.Join(f[3:], " "), "cpu.max=")}
			s.start, _ = strconv.ParseFloat(f[0], 64)
			s.end, _ = strconv.ParseFloat(f[1], 64)
			out = append(out, s)
		}
	}
	return out
}

// overlap reports whether two attempts ran at the same time.
func overlap(a, b stamp) bool { return a.start < b.end && b.start < a.end }

// TestE2ECPUsRunOneAtATime: on a machine the database gives 2 CPUs, two
// jobs of --cpus 2 run one after the other, and each one's cgroup allows
// it 2 CPUs (cpu.max 200000 100000, or on a hybrid host its v1 cpu
// cgroup's cfs quota 200000 per period 100000) where the kernel offers
// the cpu controller; where it does not, netstatus -m says so.
func TestE2ECPUsRunOneAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	t.Parallel()
	dir := t.TempDir()
	links := commandLinks(t, dir, netmgrBinary(t), "netexec", "netstatus", "netmgr")
	c, cl := procCluster(t, dir, 1, 1)
	r := &e2eRunner{links: links, env: c.Env()}
	db := "allow_root_jobs\nmachine " + c.Stubs[0].Name + " = {nprocs=2}\n"
	if _, err := cl.LoadDatabase(t.Context(), client.DatabaseText{Filename: "cpus.db", Text: db}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	for _, name := range []string{"cpuA", "cpuB"} {
		r.run(t, "netexec", "--name", name, "--cpus", "2", "/bin/sh", "-c", stampScript(2)).wantCode(t, 0)
	}
	got := stamps(t, r, cl, "cpuA", "cpuB")
	if overlap(got[0], got[1]) {
		t.Errorf("two --cpus 2 jobs ran at once on a 2-CPU machine: %+v", got)
	}
	ms, err := cl.Machines(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		switch {
		case s.cpuMax == "200000 100000":
		case s.cpuMax == "none" && ms[0].Resources != nil && slices.ContainsFunc(ms[0].Resources.Unenforced, func(u string) bool { return strings.HasPrefix(u, "cpus:") }):
			t.Logf("this kernel's cgroup v2 tree has no cpu controller, so cpu.max is not written; the stub says: %q", ms[0].Resources.Unenforced)
		default:
			t.Errorf("%s: cpu.max %q, want 200000 100000 (2 CPUs), or none with netstatus -m saying cpus are not enforced (%+v)", s.job, s.cpuMax, ms[0].Resources)
		}
	}
	res := r.run(t, "netstatus", "-m")
	res.wantCode(t, 0)
	t.Logf("netstatus -m:\n%s", res.stdout)
}

// TestE2EGPUsFromNvidiaSMI: a stand-in nvidia-smi on the stub's PATH
// reports two A100s; three instances of --gpus 1 run two at a time, and
// the two that run together see different CUDA_VISIBLE_DEVICES, equal to
// their NETMGR_GPUS and to the GPUs the servers recorded.
func TestE2EGPUsFromNvidiaSMI(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakebin")
	if err := os.Mkdir(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	smi := "#!/bin/sh\necho '0, NVIDIA A100-SXM4-40GB, 40960'\necho '1, NVIDIA A100-SXM4-40GB, 40960'\n"
	if err := os.WriteFile(filepath.Join(fake, "nvidia-smi"), []byte(smi), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH")) // the stub inherits it
	links := commandLinks(t, dir, netmgrBinary(t), "netexec", "netstatus", "netmgr")
	c, cl := procCluster(t, dir, 1, 1)
	r := &e2eRunner{links: links, env: c.Env()}
	db := "allow_root_jobs\nmachine " + c.Stubs[0].Name + " = {nprocs=4}\n"
	if _, err := cl.LoadDatabase(t.Context(), client.DatabaseText{Filename: "gpus.db", Text: db}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	r.run(t, "netexec", "--name", "train", "-n", "3", "--gpus", "a100:1", "/bin/sh", "-c", stampScript(2)).wantCode(t, 0)
	got := stamps(t, r, cl, "train")
	job, err := cl.Job(t.Context(), "train")
	if err != nil {
		t.Fatal(err)
	}
	together := 0
	for i, a := range got {
		g, n, _ := strings.Cut(a.gpus, "/")
		if g != n || (g != "0" && g != "1") {
			t.Errorf("instance %s saw CUDA_VISIBLE_DEVICES=%q NETMGR_GPUS=%q, want one GPU, 0 or 1, in both", a.instance, g, n)
		}
		if rec := job.Instances[i].GPUs; len(rec) != 1 || strconv.Itoa(rec[0]) != g {
			t.Errorf("instance %s saw GPU %s, the servers recorded %v", a.instance, g, rec)
		}
		for _, b := range got[i+1:] {
			if overlap(a, b) {
				together++
				if a.gpus == b.gpus {
					t.Errorf("instances %s and %s ran at once on the same GPU %s", a.instance, b.instance, a.gpus)
				}
			}
		}
	}
	if together == 0 {
		t.Errorf("no two instances ran together (4 CPUs, 2 GPUs): %+v", got)
	}
	res := r.run(t, "netstatus", "-m")
	res.wantCode(t, 0)
	if !strings.Contains(res.stdout, "2/2 a100") {
		t.Errorf("netstatus -m does not show the two free a100 GPUs:\n%s", res.stdout)
	}

	// The README's MPI-style example, taken from the README, as a gang
	// of two ranks of one GPU each.
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "cat > train.sh <<'EOF'\n")
	script, _, ok2 := strings.Cut(rest, "\nEOF\n")
	if !ok || !ok2 {
		t.Fatal("README has no train.sh example in its Resources section")
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "train.sh"), []byte(script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.dir = work
	r.run(t, "netexec", "--name", "mpi", "--gang", "-n", "2", "--gpus", "a100:1", "--wait", "done", "./train.sh").wantCode(t, 0)
	var seen []string
	for i := range 2 {
		out := r.run(t, "netmgr", "logs", "--instance", strconv.Itoa(i), "mpi")
		out.wantCode(t, 0)
		prefix := "rank " + strconv.Itoa(i) + " of 2 on " + c.Stubs[0].Name + " uses GPUs "
		g, ok := strings.CutPrefix(strings.TrimSpace(out.stdout), prefix)
		if !ok || (g != "0" && g != "1") || slices.Contains(seen, g) {
			t.Errorf("rank %d printed %q, want %q and a GPU of its own", i, out.stdout, prefix+"0|1")
		}
		seen = append(seen, g)
	}
}

// TestE2EGPUsFencedByDevicesCgroup: with a stand-in nvidia-smi reporting
// two GPUs and two GPU device nodes made with mknod (char 195:0 and
// 195:1: the devices cgroup rules go by device number, so nodes in a
// temporary directory stand for /dev/nvidiaN; no driver is behind them),
// each of two --gpus 1 instances opens its own GPU's node as far as the
// missing driver (ENXIO) and is refused the other's by its devices cgroup
// (EPERM). Where the host has no cgroup v1 devices hierarchy, netstatus
// -m must say GPUs are not fenced, and the test says so.
func TestE2EGPUsFencedByDevicesCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	if os.Geteuid() != 0 {
		t.Skip("mknod of the GPU device nodes needs root")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakebin")
	nodes := filepath.Join(dir, "dev")
	for _, d := range []string{fake, nodes} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for m := range 2 {
		if err := unix.Mknod(filepath.Join(nodes, "nvidia"+strconv.Itoa(m)), unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(m)))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	}
	smi := "#!/bin/sh\necho '0, NVIDIA A100-SXM4-40GB, 40960'\necho '1, NVIDIA A100-SXM4-40GB, 40960'\n"
	if err := os.WriteFile(filepath.Join(fake, "nvidia-smi"), []byte(smi), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH")) // the stub inherits it
	links := commandLinks(t, dir, netmgrBinary(t), "netexec", "netstatus", "netmgr")
	c, cl := procCluster(t, dir, 1, 1)
	r := &e2eRunner{links: links, env: c.Env()}
	db := "allow_root_jobs\nmachine " + c.Stubs[0].Name + " = {nprocs=4}\n"
	if _, err := cl.LoadDatabase(t.Context(), client.DatabaseText{Filename: "gpus.db", Text: db}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	ms, err := cl.Machines(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res := ms[0].Resources; res != nil && slices.ContainsFunc(res.Unenforced, func(u string) bool { return strings.HasPrefix(u, "gpus:") }) {
		if _, err := os.Stat("/sys/fs/cgroup/devices/devices.deny"); err == nil {
			t.Fatalf("this host has a cgroup v1 devices hierarchy, yet the stub says: %q", res.Unenforced)
		}
		t.Skipf("no cgroup v1 devices hierarchy; the stub says: %q", res.Unenforced)
	}
	script := `echo "gpus=$CUDA_VISIBLE_DEVICES"; for n in 0 1; do cat ` + nodes + `/nvidia$n 2>&1; done; true`
	r.run(t, "netexec", "--name", "fence", "-n", "2", "--gpus", "1", "--wait", "done", "/bin/sh", "-c", script).wantCode(t, 0)
	for i := range 2 {
		out := r.run(t, "netmgr", "logs", "--instance", strconv.Itoa(i), "fence")
		out.wantCode(t, 0)
		g, _, _ := strings.Cut(strings.TrimPrefix(out.stdout, "gpus="), "\n")
		other := map[string]string{"0": "1", "1": "0"}[g]
		if other == "" {
			t.Fatalf("instance %d printed %q, want gpus=0 or gpus=1 first", i, out.stdout)
		}
		if !strings.Contains(out.stdout, "nvidia"+g+": No such device or address") {
			t.Errorf("instance %d, given GPU %s, could not reach its node as far as the driver (want ENXIO):\n%s", i, g, out.stdout)
		}
		if !strings.Contains(out.stdout, "nvidia"+other+": Operation not permitted") {
			t.Errorf("instance %d, given GPU %s, was not refused GPU %s by its devices cgroup (want EPERM):\n%s", i, g, other, out.stdout)
		}
	}
}

// TestE2ELicenseSerialisesTwoMachines: with license matlab = 1, two jobs
// holding it, each on its own machine, run one after the other;
// netstatus --licenses shows it held and --why names it for the other.
func TestE2ELicenseSerialisesTwoMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 3 processes")
	}
	t.Parallel()
	dir := t.TempDir()
	links := commandLinks(t, dir, netmgrBinary(t), "netexec", "netstatus", "netmgr")
	c, cl := procCluster(t, dir, 1, 2)
	r := &e2eRunner{links: links, env: c.Env()}
	if _, err := cl.LoadDatabase(t.Context(), client.DatabaseText{Filename: "lic.db", Text: "allow_root_jobs\nlicense matlab = 1\n"}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	for i, name := range []string{"licA", "licB"} {
		r.run(t, "netexec", "--name", name, "--license", "matlab", "--machines", c.Stubs[i].Name,
			"/bin/sh", "-c", stampScript(3)).wantCode(t, 0)
	}
	testwait.Until(t, time.Minute, "one job holding the licence, the other waiting for it", func() (bool, string) {
		lic := r.run(t, "netstatus", "--licenses")
		a, b := r.run(t, "netstatus", "--why", "licA"), r.run(t, "netstatus", "--why", "licB")
		why := a.stdout + b.stdout
		ok := strings.Contains(lic.stdout, "matlab   1      1     0") && strings.Contains(why, "waiting for licence matlab: 1 of 1 in use")
		return ok, lic.stdout + why
	})
	got := stamps(t, r, cl, "licA", "licB")
	if got[0].machine == got[1].machine {
		t.Fatalf("both jobs ran on %s, want one per machine", got[0].machine)
	}
	if overlap(got[0], got[1]) {
		t.Errorf("two jobs holding the only matlab licence ran at once on two machines: %+v", got)
	}
}
