package stub

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/internal/procinfo"
	"golang.org/x/sys/unix"
)

// pseudoFS are file system types that are no storage a job could need:
// kernel interfaces and memory-backed scratch space.
var pseudoFS = map[string]bool{
	"autofs": true, "binfmt_misc": true, "bpf": true, "cgroup": true,
	"cgroup2": true, "configfs": true, "debugfs": true, "devpts": true,
	"devtmpfs": true, "efivarfs": true, "fusectl": true, "hugetlbfs": true,
	"mqueue": true, "nsfs": true, "proc": true, "pstore": true,
	"ramfs": true, "rpc_pipefs": true, "securityfs": true, "selinuxfs": true,
	"sysfs": true, "tmpfs": true, "tracefs": true,
}

// factSource reads what the stub reports about its machine from /proc,
// and adds what its init file claims.
type factSource struct {
	fs   procinfo.FS
	err  error        // from opening /proc; every read then fails with it
	init *dblang.Init // nil without --init
	// gpus are the GPUs nvidia-smi found at start; execDir is where the
	// free disk is measured ("" for none); unenforced is what the stub
	// cannot enforce (resources.go); gpusFenced is set when a cgroup
	// v1 devices hierarchy hides from each job the GPUs not given to it.
	// Set before the stub serves.
	gpus       []client.GPU
	execDir    string
	unenforced []string
	gpusFenced bool

	loadMu sync.Mutex // guards the last load average read
	loadAt time.Time
	loadV  float64
}

// loadFresh is how long a load average read stays the answer. Linux
// recomputes it every 5 s (LOAD_FREQ); the lease keeper asks whether it
// moved at every renewal (twice a second on a small pool): at rest the
// stub read /proc/loadavg about twice a second.
const loadFresh = time.Second

func newFactSource() *factSource {
	fs, err := procinfo.NewDefaultFS()
	return &factSource{fs: fs, err: err}
}

// readInit parses the stub's init file.
func readInit(path string) (*dblang.Init, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read init file: %w", err)
	}
	init, err := dblang.ParseInit(path, text)
	if err != nil {
		return nil, err
	}
	return init, nil
}

// facts gathers the machine's facts; name and httpAddr are the stub's.
func (f *factSource) facts(name, httpAddr string) (client.Facts, error) {
	arch, err := machineArch()
	if err != nil {
		return client.Facts{}, err
	}
	mem, err := f.memoryMB()
	if err != nil {
		return client.Facts{}, err
	}
	mounts, err := f.mounts()
	if err != nil {
		return client.Facts{}, err
	}
	load, err := f.load()
	if err != nil {
		return client.Facts{}, err
	}
	facts := client.Facts{
		Name:     name,
		Arch:     arch,
		CPUs:     runtime.NumCPU(),
		MemoryMB: mem,
		Mounts:   mounts,
		Load:     load,
		HTTPAddr: httpAddr,

		GPUs:       slices.Clone(f.gpus),
		Unenforced: slices.Clone(f.unenforced),
	}
	if f.execDir != "" {
		facts.DiskMB = freeDiskMB(f.execDir)
	}
	if !f.gpusFenced && (len(f.gpus) > 0 || f.init != nil && hasGPUs(f.init.Attrs)) {
		facts.Unenforced = append(facts.Unenforced, unenforcedGPUs)
	}
	if f.init != nil {
		facts.MType = f.init.MType
		facts.Attrs = maps.Clone(f.init.Attrs)
		facts.Keys = slices.Clone(f.init.Keys)
		facts.Mounts = append(facts.Mounts, f.init.Mounts...)
		slices.Sort(facts.Mounts)
		facts.Mounts = slices.Compact(facts.Mounts)
	}
	return facts, nil
}

// machineArch returns the machine hardware name exactly as uname -m prints it.
func machineArch() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Machine[:]), nil
}

// memoryMB returns MemTotal from /proc/meminfo in MiB.
func (f *factSource) memoryMB() (int64, error) {
	if f.err != nil {
		return 0, fmt.Errorf("read meminfo: %w", f.err)
	}
	kb, err := f.fs.MemTotalKB()
	if err != nil {
		return 0, err
	}
	return int64(kb / 1024), nil
}

// mounts returns the sorted, distinct mount points of storage file systems.
func (f *factSource) mounts() ([]string, error) {
	if f.err != nil {
		return nil, fmt.Errorf("read mounts: %w", f.err)
	}
	ms, err := f.fs.Mounts()
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	var out []string
	for _, m := range ms {
		if pseudoFS[m.FSType] || strings.HasPrefix(m.FSType, "cgroup") {
			continue
		}
		out = append(out, m.MountPoint)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// load returns the 1-minute load average, as read within loadFresh.
func (f *factSource) load() (float64, error) {
	if f.err != nil {
		return 0, fmt.Errorf("read load average: %w", f.err)
	}
	f.loadMu.Lock()
	defer f.loadMu.Unlock()
	if now := time.Now(); f.loadAt.IsZero() || now.Sub(f.loadAt) >= loadFresh {
		l, err := f.fs.Load1()
		if err != nil {
			return 0, err
		}
		f.loadAt, f.loadV = now, l
	}
	return f.loadV, nil
}
