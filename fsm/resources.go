package fsm

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
)

// Countable resources (command level 40, snapshot version 14): what an
// instance holds while it is active (placed, running, suspended or
// unknown), counted per machine (CPUs, GPUs, generic resources, disk) and
// across the pool (licences). The counts are derived indexes, rebuilt
// from the instances on restore; what is persisted is the spec's request,
// the machine's facts, the database's licences and, per instance, the
// GPU indices place gave it. See doc.go, *Resources*.

// GPU is one GPU of a machine: its index as the driver numbers it (what
// CUDA_VISIBLE_DEVICES names), its model, and its memory in MB (0 when
// unknown).
type GPU struct {
	Index    int    `json:"index"`
	Type     string `json:"type,omitempty"`
	MemoryMB int64  `json:"memory_mb,omitempty"`
}

// DeclaredLicense is a `license NAME = N` declaration: at most Count
// instances' worth of NAME are held at once across the pool.
type DeclaredLicense struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Resource attribute names: a machine's GPUs and generic resources are
// declared as attributes (init file, mtype or machine declaration), so
// they merge as attributes do. gpus=N declares N GPUs of no type,
// gpus.TYPE=N (gpus={a100=4} in the languages) N of TYPE, gpu_mem=MB
// their memory each; gres.NAME=N (gres={fpga=2}) N of NAME; disk=MB the
// local disk instances may claim, instead of the free disk the stub
// found under its exec dir.
const (
	AttrGPUs       = "gpus"
	AttrGPUPrefix  = "gpus."
	AttrGPUMemory  = "gpu_mem"
	AttrGresPrefix = "gres."
	AttrDisk       = "disk"
)

// MaxGPUs is the most GPUs of one machine the scheduler counts; more are
// ignored (the set of GPUs in use is one 64-bit word).
const MaxGPUs = 64

// maxResource bounds a declared count, as maxSlots bounds nprocs.
const maxResource = 1 << 20

// HasResources reports whether the job asks for resources that only
// command level 40 counts: more than one CPU, GPUs, generic resources,
// disk or licences.
func (s *JobSpec) HasResources() bool {
	return s.CPUs > 1 || s.ExclusiveCPUs || s.GPUs > 0 || s.GPUType != "" || len(s.Gres) > 0 || s.DiskMB > 0 || len(s.Licenses) > 0
}

// CPUsPerInstance is how many of a machine's CPUs (slots) one instance
// takes: CPUs, or 1.
func (s *JobSpec) CPUsPerInstance() int { return max(s.CPUs, 1) }

// checkResources checks the spec's resource requests.
func (s *JobSpec) checkResources() error {
	if s.CPUs < 0 || s.GPUs < 0 || s.DiskMB < 0 {
		return fmt.Errorf("%w: cpus, gpus and disk must not be negative", ErrInvalidSpec)
	}
	if s.GPUType != "" && s.GPUs == 0 {
		return fmt.Errorf("%w: gpus: a type needs a count", ErrInvalidSpec)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Gres)) {
		if name == "" || s.Gres[name] < 1 {
			return fmt.Errorf("%w: gres: %q needs a name and a count of at least 1", ErrInvalidSpec, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Licenses)) {
		if name == "" || s.Licenses[name] < 1 {
			return fmt.Errorf("%w: license: %q needs a name and a count of at least 1", ErrInvalidSpec, name)
		}
	}
	return nil
}

// effectiveResources fills e's GPUs, Gres and DiskMB from its attributes
// and the detected facts: GPUs declared as attributes replace the ones
// the stub detected (the declaration is the site's word), untyped ones
// first, then each type in name order.
func effectiveResources(e *Effective, f *MachineFacts) {
	mem := int64(clamp(e.Attrs[AttrGPUMemory], 0, maxMemoryMB))
	declared := false
	add := func(typ string, n float64) {
		declared = true
		for range int(clamp(n, 0, MaxGPUs)) {
			if len(e.GPUs) < MaxGPUs {
				e.GPUs = append(e.GPUs, GPU{Index: len(e.GPUs), Type: typ, MemoryMB: mem})
			}
		}
	}
	if n, ok := e.Attrs[AttrGPUs]; ok {
		add("", n)
	}
	for _, name := range slices.Sorted(maps.Keys(e.Attrs)) {
		if typ, ok := strings.CutPrefix(name, AttrGPUPrefix); ok && typ != "" {
			add(typ, e.Attrs[name])
		}
		if g, ok := strings.CutPrefix(name, AttrGresPrefix); ok && g != "" {
			if n := int(clamp(e.Attrs[name], 0, maxResource)); n > 0 {
				if e.Gres == nil {
					e.Gres = map[string]int{}
				}
				e.Gres[g] = n
			}
		}
	}
	if !declared {
		for _, g := range f.GPUs {
			if g.Index >= 0 && g.Index < MaxGPUs {
				e.GPUs = append(e.GPUs, g)
			}
		}
	}
	e.DiskMB = f.DiskMB
	if d, ok := e.Attrs[AttrDisk]; ok {
		e.DiskMB = int64(clamp(d, 0, maxMemoryMB))
	}
}

// usage is what the active instances on one machine hold.
type usage struct {
	cpus int
	gpus uint64 // bit i: the GPU of index i
	disk int64
	gres map[string]int
}

// hold adds (sign 1) or removes (sign -1) what active instance in of j
// holds to the usage indexes.
func (d *db) hold(j *Job, in *Instance, sign int) {
	s := &j.Spec
	u := d.usage[in.Machine]
	if u == nil {
		u = &usage{}
		d.usage[in.Machine] = u
	}
	u.cpus += sign * s.CPUsPerInstance()
	u.disk += int64(sign) * s.DiskMB
	for _, g := range in.GPUs {
		if g >= 0 && g < MaxGPUs {
			if sign > 0 {
				u.gpus |= 1 << uint(g)
			} else {
				u.gpus &^= 1 << uint(g)
			}
		}
	}
	for name, n := range s.Gres { // each name its own counter: order does not matter
		if u.gres == nil {
			u.gres = map[string]int{}
		}
		if u.gres[name] += sign * n; u.gres[name] <= 0 {
			delete(u.gres, name)
		}
	}
	for name, n := range s.Licenses {
		if d.usedLicenses[name] += sign * n; d.usedLicenses[name] <= 0 {
			delete(d.usedLicenses, name)
		}
	}
	if u.cpus <= 0 && u.gpus == 0 && u.disk <= 0 && len(u.gres) == 0 {
		delete(d.usage, in.Machine)
	}
}

// freeGPUs returns the indices of machine m's free GPUs of type typ (""
// for any), lowest first, leaving out those in skip.
func (d *db) freeGPUs(m *Machine, typ string, skip uint64) []int {
	var used uint64
	if u := d.usage[m.Name]; u != nil {
		used = u.gpus
	}
	used |= skip
	var out []int
	for _, g := range m.eff.GPUs {
		if used&(1<<uint(g.Index)) == 0 && (typ == "" || g.Type == typ) {
			out = append(out, g.Index)
		}
	}
	return out
}

// pickGPUs is the GPUs place gives an instance of j on m: the lowest free
// indices of its type. Apply decides it, so every replica gives the same.
func (d *db) pickGPUs(m *Machine, j *Job) []int {
	if j.Spec.GPUs == 0 {
		return nil
	}
	free := d.freeGPUs(m, j.Spec.GPUType, 0)
	if len(free) < j.Spec.GPUs {
		return nil
	}
	return free[:j.Spec.GPUs]
}

// resourcesFit reports whether an instance of j fits on m with what t
// (a gang's earlier assignments) takes counted: CPUs, GPUs, generic
// resources, disk and licences.
func (d *db) resourcesFit(j *Job, m *Machine, t *taken) bool {
	s := &j.Spec
	u := d.usage[m.Name]
	if u == nil {
		u = &usage{}
	}
	var tk takenRes
	if t != nil {
		tk = t.res[m.Name]
	}
	if u.cpus+tk.cpus+s.CPUsPerInstance() > m.Slots() {
		return false
	}
	if s.DiskMB > 0 && u.disk+tk.disk+s.DiskMB > m.eff.DiskMB {
		return false
	}
	if s.GPUs > 0 && len(d.freeGPUs(m, s.GPUType, 0)) < tk.gpus+s.GPUs {
		return false
	}
	for name, n := range s.Gres { // a conjunction: order does not matter
		if u.gres[name]+n*tk.count+n > m.eff.Gres[name] {
			return false
		}
	}
	for name, n := range s.Licenses {
		held := 0
		if t != nil {
			held = t.licenses * n
		}
		if d.usedLicenses[name]+held+n > d.licenseCount(name) {
			return false
		}
	}
	return true
}

// takenRes is what a gang's earlier assignments take of one machine.
type takenRes struct {
	cpus, gpus, count int
	disk              int64
}

// take counts one more instance of j on machine in t.
func (t *taken) take(j *Job, machine string) {
	if t.res == nil {
		t.res = map[string]takenRes{}
	}
	r := t.res[machine]
	r.cpus += j.Spec.CPUsPerInstance()
	r.gpus += j.Spec.GPUs
	r.disk += j.Spec.DiskMB
	r.count++
	t.res[machine] = r
	t.licenses++
}

// licenseCount is how many of licence name the database declares; 0 for
// one it does not.
func (d *db) licenseCount(name string) int {
	for _, l := range d.database.Licenses {
		if l.Name == name {
			return l.Count
		}
	}
	return 0
}

// LicenseUse is one declared licence and how many are held now.
type LicenseUse struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Used  int    `json:"used"`
}

// Licenses returns every declared licence with its use, in declaration
// order, then any held licence the database no longer declares.
func (v View) Licenses() []LicenseUse {
	var out []LicenseUse
	for _, l := range v.d.database.Licenses {
		out = append(out, LicenseUse{Name: l.Name, Count: l.Count, Used: v.d.usedLicenses[l.Name]})
	}
	for _, name := range slices.Sorted(maps.Keys(v.d.usedLicenses)) {
		if v.d.licenseCount(name) == 0 && !slices.ContainsFunc(v.d.database.Licenses, func(l DeclaredLicense) bool { return l.Name == name }) {
			out = append(out, LicenseUse{Name: name, Used: v.d.usedLicenses[name]})
		}
	}
	return out
}

// LicensesUsed returns how many of licence name are held now.
func (v View) LicensesUsed(name string) int { return v.d.usedLicenses[name] }

// MachineUsage is what the active instances on a machine hold: CPUs, the
// GPU indices in use (bit i for index i), disk, and generic resources
// (the map is the FSM's: do not change it).
func (v View) MachineUsage(machine string) (cpus int, gpus uint64, diskMB int64, gres map[string]int) {
	u := v.d.usage[machine]
	if u == nil {
		return 0, 0, 0, nil
	}
	return u.cpus, u.gpus, u.disk, u.gres
}

// GPUsInUse counts the set bits of a GPU mask.
func GPUsInUse(mask uint64) int { return bits.OnesCount64(mask) }
