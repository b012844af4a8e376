package matcher

import (
	"strconv"
	"strings"
)

// MachineView is what the scheduler knows of one machine at planning time.
// The matcher only reads it; Pool.Take changes the Pool's own copy.
type MachineView struct {
	// Name is the machine's unique name; it also feeds the tie-break hash.
	Name string
	// Keys are the machine's keys, sorted; they include the architecture
	// (e.g. "x86_64"). Matcher.Match relies on the order; a Pool does not.
	Keys []string
	// Up reports that the machine is up and awake: it accepts new work.
	Up bool
	// Slots is the most instances it may run at once (its CPUs by default).
	Slots int
	// Running is the number of instances placed or running on it now.
	Running int
	// Load is the 1-minute load average.
	Load float64
	// Rating is the machine's relative speed; 0 means 1.
	Rating float64
}

// Request is one instance to place.
type Request struct {
	// JobID identifies the job; with Instance it seeds the tie-break.
	JobID uint64
	// Instance is the instance number within the job.
	Instance int
	// BinaryKeys are the keys of the job's binaries, sorted; the key "*"
	// matches every machine.
	BinaryKeys []string
}

// Wildcard is the binary key that matches every machine.
const Wildcard = "*"

// Result is the matcher's answer for one Request.
type Result struct {
	// Machine is the index of the chosen machine in the slice (or Pool)
	// given to the matcher, or -1 when no machine fits.
	Machine int
	// Key is the binary key chosen for Machine: the first of the request's
	// keys (in their order) that the machine has, else "*". Empty when
	// Machine is -1.
	Key string
	// Rejections says, per filter in pipeline order, how many machines the
	// filter removed and why; filters that removed none are left out. Each
	// machine is counted once, by the first filter that removed it.
	Rejections []Rejection
}

// Rejection is how many machines one filter removed, and why.
type Rejection struct {
	// Filter is the filter's name: "binary", "up", "slot".
	Filter string
	// Count is how many machines the filter removed.
	Count int
	// Reason is a verb phrase agreeing with Count, such as
	// "lack binary key sparc|mips" or, for one machine, "has no free slot".
	Reason string
}

// Why explains the result in one line for netstatus --why, for example
// "3 machines lack binary key sparc; 1 has no free slot". It returns "no
// machines in the pool" when the matcher was given no machines, and "" when
// a machine was chosen and none was turned down.
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
