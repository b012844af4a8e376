package matcher

import (
	"strconv"
	"strings"
)

// MachineView is what the scheduler knows of one machine at planning time.
// The matcher only reads it; Pool.Take changes the Pool's own copy and never
// the caller's slices or maps.
type MachineView struct {
	// Name is the machine's unique name; machines= names it and it feeds the
	// tie-break hash.
	Name string
	// Keys are the machine's keys: its architecture (e.g. "x86_64"), its
	// mtype's keys, and keys declared for it or read from its init file. A
	// Pool does not need them sorted.
	Keys []string
	// Attrs are the machine's numeric attributes (mem, rating, nprocs and
	// any declared one) that requirements such as mem>10 compare against.
	Attrs map[string]float64
	// Mounts are the file systems the machine has mounted; a Pool does not
	// need them sorted.
	Mounts []string
	// Up reports that the machine is in the pool and not draining.
	Up bool
	// Awake reports that the machine is not asleep under its owner's policy;
	// a machine that is up but not awake takes no new work.
	Awake bool
	// AsleepReason says why a machine that is not Awake sleeps ("console
	// login", "load 3.2 > 2"); the awake filter counts its rejections per
	// reason. Ignored while Awake.
	AsleepReason string
	// ReservedBy is the user holding a reservation on the machine, or ""
	// when it is not reserved; a reserved machine runs only that user's jobs.
	ReservedBy string
	// Slots is the most instances it may run at once (nprocs, by default its
	// CPU count).
	Slots int
	// Running is the number of instances placed or running on it now.
	Running int
	// UsedCPUs is the CPUs (slots) those instances claim: one each, or
	// their --cpus. The slots in use are the larger of Running and
	// UsedCPUs, so a caller that counts only instances loses nothing.
	UsedCPUs int
	// Load is the 1-minute load average; negative or NaN counts as 0.
	Load float64
	// Rating is the machine's relative speed; 0, negative or NaN means 1.
	Rating float64
	// MemoryMB is its total physical memory; 0 means unknown, and a machine
	// of unknown memory takes no instance that asks for memory.
	MemoryMB int64
	// UsedMemoryMB is the memory claimed by the instances placed or running
	// on it (the sum of their requests, not a measurement).
	UsedMemoryMB int64
	// ImposedLoad is the sum of the load= factors of the instances placed or
	// running on it; negative or NaN counts as 0.
	ImposedLoad float64
	// JobCounts is how many instances of each job (by id) are placed or
	// running on it. The matcher never writes to the caller's map.
	JobCounts map[uint64]int
	// GPUs are the machine's GPUs in index order, each with its type and
	// whether an instance placed or running there holds it. The matcher
	// counts the free ones; which GPU an instance gets is the FSM's to
	// decide (the lowest free indices of the type), and Take marks them
	// the same way in the Pool's copy.
	GPUs []GPU
	// Gres is the count of each named generic resource the machine has
	// (gres={fpga=2}), UsedGres what its instances hold of them. The
	// matcher never writes to the caller's maps.
	Gres, UsedGres map[string]int
	// DiskMB is the local disk under the exec dir that instances may
	// claim with --disk; 0 means unknown, and a machine of unknown disk
	// takes no instance that asks for disk. UsedDiskMB is what its
	// instances claim.
	DiskMB, UsedDiskMB int64
}

// GPU is one GPU of a machine.
type GPU struct {
	// Type is the GPU's model as the machine names it ("a100"); "" when
	// it was declared without one.
	Type string
	// Used reports that an instance holds it.
	Used bool
}

// GresRequest asks for Count of the generic resource Name.
type GresRequest struct {
	Name  string
	Count int
}

// Requirement is one comparison on a numeric machine attribute, such as
// mem>10: the machine's Attrs[Attr] Op Value must hold. It has the same
// fields as client.Requirement, so one converts to the other.
type Requirement struct {
	// Attr is the attribute's name, such as "mem".
	Attr string
	// Op is one of > >= < <= == !=; any other operator is never satisfied.
	Op string
	// Value is the number the attribute is compared with.
	Value float64
}

// Request is one instance to place.
type Request struct {
	// JobID identifies the job: per-machine bounds and the spread scorer
	// count its instances, and with Instance it seeds the tie-break.
	JobID uint64
	// Instance is the instance number within the job.
	Instance int
	// Owner is the user who submitted the job; a machine reserved by
	// another user is turned down.
	Owner string
	// BinaryKeys are the keys of the job's binaries, in the order the
	// matcher prefers them; the key "*" matches every machine.
	BinaryKeys []string
	// Keys are keys the machine must all have.
	Keys []string
	// Requirements are comparisons the machine's attributes must all meet.
	Requirements []Requirement
	// Mounts are file systems the machine must all have mounted.
	Mounts []string
	// Machines, when not empty, restricts the instance to the machines of
	// these names.
	Machines []string
	// MaxPerMachine bounds the job's instances on one machine; 0 means no
	// bound. A unique job is sent as 1.
	MaxPerMachine int
	// MemoryMB is the memory each instance asks for; 0 asks for none.
	MemoryMB int64
	// Load is the load each instance imposes on its machine (load=F);
	// 0, negative or NaN means 1.
	Load float64
	// CPUs is how many of a machine's CPUs (slots) each instance takes;
	// 0 means 1.
	CPUs int
	// GPUs is how many free GPUs each instance needs, of type GPUType
	// when that is not "".
	GPUs    int
	GPUType string
	// Gres are the generic resources each instance needs, at most one
	// request per name.
	Gres []GresRequest
	// DiskMB is the local disk each instance claims; 0 claims none.
	DiskMB int64
	// Prefer, when set, names the machine the instance should come back
	// to (its last attempt's, after a checkpoint exit): affinityScorer
	// weighs every other machine one unit of load more.
	Prefer string
}

// Wildcard is the binary key that matches every machine.
const Wildcard = "*"

// Filter names, as they appear in Rejection.Filter, in pipeline order.
const (
	FilterBinary      = "binary"
	FilterKeys        = "keys"
	FilterMachines    = "machines"
	FilterAttrs       = "attrs"
	FilterMounts      = "mounts"
	FilterReservation = "reservation"
	FilterUp          = "up"
	FilterAwake       = "awake"
	FilterSlot        = "slot"
	FilterPerMachine  = "per-machine"
	FilterMemory      = "memory"
	FilterGPUs        = "gpus"
	FilterCPUs        = "cpus"
	FilterGres        = "gres"
	FilterDisk        = "disk"
)

// Result is the matcher's answer for one Request.
type Result struct {
	// Machine is the index of the chosen machine in the Pool (or slice)
	// given to the matcher, or -1 when no machine fits.
	Machine int
	// Key is the binary key chosen for Machine: the first of the request's
	// binary keys (in their order) that the machine has, else "*". Empty
	// when Machine is -1.
	Key string
	// Matching is how many machines meet every requirement of the job
	// (binary, keys, attrs, mounts, machines), whatever their state. When
	// Machine is -1 and Matching > 0 the instance waits for capacity (the
	// matching machines are reserved, down, asleep or full); when Matching
	// is 0 no machine in the pool can ever run it.
	Matching int
	// Rejections says how many machines were turned down and why, per
	// filter in pipeline order and, within a filter that has several causes
	// (keys, attrs, mounts), per cause in request order. Causes that removed
	// no machine are left out. Each machine is counted once: by the first
	// filter, and within it the first cause, that turned it down.
	Rejections []Rejection
}

// Rejection is how many machines one filter turned down for one cause.
type Rejection struct {
	// Filter is the filter's name, one of the Filter constants.
	Filter string
	// Count is how many machines it turned down for this cause.
	Count int
	// Reason is a verb phrase agreeing with Count, such as
	// "lack key mathlab" or, for one machine, "has no free slot".
	Reason string
}

// Why explains the result in one line for netstatus --why, for example
// "8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot". It
// returns "no machines in the pool" when the matcher was given no machines,
// and "" when a machine was chosen and none was turned down.
func (r Result) Why() string {
	if len(r.Rejections) == 0 {
		if r.Machine < 0 {
			return "no machines in the pool"
		}
		return ""
	}
	var b strings.Builder
	for i, rej := range r.Rejections {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strconv.Itoa(rej.Count))
		if i == 0 {
			b.WriteString(plural(rej.Count, " machine", " machines"))
		}
		b.WriteByte(' ')
		b.WriteString(rej.Reason)
	}
	return b.String()
}

// plural returns one when n is 1 and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
