package fsmscale

import (
	"fmt"
	"slices"

	"github.com/netmgr/netmgr/fsm"
)

// classes is how many machine types the pool has; machine i is of class
// i % classes.
const classes = 20

// class is one machine type of the pool: its mtype declaration and the
// hardware its machines detect.
type class struct {
	name   string
	arch   string
	cpus   int
	memMB  int64
	keys   []string
	attrs  map[string]float64
	mounts []string
}

// newClass returns class c: mostly x86_64, some aarch64, a few sparc and
// mips; 8 to 64 CPUs with 4 GB each; fpu on most, gpu, matlab and a
// licence on some.
func newClass(c int) class {
	arch := "x86_64"
	switch {
	case c >= 19:
		arch = "mips"
	case c >= 17:
		arch = "sparc"
	case c >= 12:
		arch = "aarch64"
	}
	cpus := 8 << (c % 4)
	k := class{
		name:   fmt.Sprintf("class%02d", c),
		arch:   arch,
		cpus:   cpus,
		memMB:  int64(cpus) * 4096,
		attrs:  map[string]float64{"rating": float64(1 + c%4), "mem": float64(cpus * 4096)},
		mounts: []string{"/usr/local"},
	}
	if c%5 != 4 {
		k.keys = append(k.keys, "fpu")
	}
	if c == 3 || c == 7 || c == 11 {
		k.keys = append(k.keys, "gpu")
		k.attrs["gpus"] = 4
	}
	if c%4 == 1 {
		k.keys = append(k.keys, "matlab")
	}
	if c%6 == 0 {
		k.keys = append(k.keys, "lic")
	}
	return k
}

// machine is the generator's model of one machine: what the FSM will
// compute as its effective attributes, and what runs there.
type machine struct {
	name    string
	class   int
	keys    []string // effective keys: arch, the class's and its own, sorted
	mounts  []string
	slots   int
	memMB   int64
	running int
	usedMB  int64
	perJob  map[uint64]int
}

// machineName is machine i's name.
func machineName(i int) string { return fmt.Sprintf("node%05d.cluster.example.org", i) }

// newMachine returns machine i's facts as its stub reports them and the
// model of it.
func newMachine(i int, ks []class) (fsm.MachineFacts, machine) {
	k := ks[i%classes]
	f := fsm.MachineFacts{
		Name:     machineName(i),
		Arch:     k.arch,
		CPUs:     k.cpus,
		MemoryMB: k.memMB,
		Mounts:   []string{"/home", "/scratch"},
		// A loopback address on port 1, where nothing listens: a server
		// restored from this state that tries to reach the stub is
		// refused at once, and no real stub hears it.
		Addr: fmt.Sprintf("127.%d.%d.%d:1", 16+i>>16, (i>>8)&255, i&255),
	}
	if i%3 == 0 {
		f.Mounts = append(f.Mounts, fmt.Sprintf("/data/proj%d", i%7))
	}
	if i%10 == 0 { // an init file naming a licence the site did not declare
		f.Keys = []string{"sas"}
		f.Attrs = map[string]float64{"owner_idle_minutes": 15}
	}
	keys := append(append([]string{k.arch}, k.keys...), f.Keys...)
	slices.Sort(keys)
	mounts := append(slices.Clone(f.Mounts), k.mounts...)
	slices.Sort(mounts)
	return f, machine{
		name: f.Name, class: i % classes, keys: slices.Compact(keys), mounts: mounts,
		slots: k.cpus, memMB: k.memMB, perJob: make(map[uint64]int),
	}
}

// database is the site's declarations: the keys, one mtype per class,
// every machine (of its class; every 50th with a rating of its own), three
// queues and two administrators.
func database(ks []class, machines int) fsm.Database {
	db := fsm.Database{
		Keys: []fsm.DeclaredKey{
			{Name: "fpu", Comment: "hardware floating point"},
			{Name: "gpu", Comment: "four GPUs"},
			{Name: "matlab", Comment: "matlab licence"},
			{Name: "lic", Comment: "licensed compiler"},
		},
		Queues: []fsm.DeclaredQueue{
			{Name: "batch", Priority: 1},
			{Name: "short", Priority: 5, MaxRunSeconds: 3600},
			{Name: "long", MaxRunSeconds: 7 * 24 * 3600},
		},
		Admins: []string{"root", "tclark"},
	}
	for _, k := range ks {
		db.MTypes = append(db.MTypes, fsm.DeclaredMType{Name: k.name, Keys: k.keys, Attrs: k.attrs, Mounts: k.mounts})
	}
	db.Machines = make([]fsm.DeclaredMachine, machines)
	for i := range db.Machines {
		db.Machines[i] = fsm.DeclaredMachine{Name: machineName(i), MType: ks[i%classes].name}
		if i%50 == 0 {
			db.Machines[i].Attrs = map[string]float64{"rating": 2.5}
		}
	}
	return db
}

// fits reports whether one more instance of a job needing memMB, at most
// perMachine per machine (0: no bound), fits on m.
func (m *machine) fits(job uint64, memMB int64, perMachine int) bool {
	return m.running < m.slots && m.usedMB+memMB <= m.memMB && (perMachine == 0 || m.perJob[job] < perMachine)
}

// take and free keep the model's counts as Place and ChildTerm change
// the FSM's.
func (m *machine) take(job uint64, memMB int64) {
	m.running++
	m.usedMB += memMB
	m.perJob[job]++
}

func (m *machine) free(job uint64, memMB int64) {
	m.running--
	m.usedMB -= memMB
	if m.perJob[job]--; m.perJob[job] == 0 {
		delete(m.perJob, job)
	}
}

// hasAll reports whether sorted holds every one of want.
func hasAll(sorted, want []string) bool {
	for _, w := range want {
		if _, ok := slices.BinarySearch(sorted, w); !ok {
			return false
		}
	}
	return true
}
