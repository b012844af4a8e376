package client

import (
	"time"
)

// Machine states.
const (
	MachineUp          = "up"
	MachineDown        = "down"
	MachineDraining    = "draining"    // up, but takes no new work
	MachineSuspect     = "suspect"     // gossip suspects it: no new work
	MachineUnreachable = "unreachable" // its lease expired: its restartable work runs elsewhere
	MachineAsleep      = "asleep"      // its owner policy put it to sleep: no new work
	MachineRestarting  = "restarting"  // its stub is restarting; its jobs run on: no new work
)

// Machine is one machine of the pool, as GET /v1/machines returns it,
// with the attributes the scheduler matches against (database declaration,
// init file and detected facts merged).
type Machine struct {
	Name     string  `json:"name"`
	Arch     string  `json:"arch"`
	MType    string  `json:"mtype,omitempty"`
	CPUs     int     `json:"cpus"`
	Slots    int     `json:"slots"`
	MemoryMB int64   `json:"memory_mb"`
	Rating   float64 `json:"rating"`
	Load     float64 `json:"load"`
	// ExecUsedBytes is the space the files in the stub's exec dir take
	// (running attempts' directories and ended ones kept for the exec
	// retention), as its stub last gossiped it; 0 when it has not (it
	// does from 1 MiB on).
	ExecUsedBytes int64              `json:"exec_used_bytes,omitempty"`
	Running       int                `json:"running"`
	State         string             `json:"state"`
	Keys          []string           `json:"keys,omitempty"`
	Attrs         map[string]float64 `json:"attrs,omitempty"`
	Mounts        []string           `json:"mounts,omitempty"`
	Addr          string             `json:"addr"`
	// Declared is true when the database has a machine declaration for it.
	Declared bool `json:"declared,omitempty"`
	// ReservedBy and ReservedUntil show a reservation in force now.
	ReservedBy    string    `json:"reserved_by,omitempty"`
	ReservedUntil time.Time `json:"reserved_until,omitzero"`
	// Problem is why the machine's stub drains it ("exec dir full: 0 B
	// free"); State is then draining. Empty when the stub reports none.
	Problem string `json:"problem,omitempty"`
	// Asleep is why the machine's owner policy put it to sleep ("console
	// login", "load 3.2 > 2", "outside window"); State is then asleep
	// unless it drains too. Empty while it is awake.
	Asleep string `json:"asleep,omitempty"`
	// Resources are the machine's countable resources and what its
	// instances hold of them; nil for a machine without any beyond CPUs.
	Resources *MachineResources `json:"resources,omitempty"`
}

// GPU is one GPU of a machine: its index (CUDA_VISIBLE_DEVICES), model
// and memory in MB (0 when unknown).
type GPU struct {
	Index    int    `json:"index"`
	Type     string `json:"type,omitempty"`
	MemoryMB int64  `json:"memory_mb,omitempty"`
	// Used reports, in a Machine, that an instance holds it.
	Used bool `json:"used,omitempty"`
}

// MachineResources is what netstatus -m shows of a machine's countable
// resources: each one's total and what the active instances hold.
type MachineResources struct {
	CPUsUsed   int            `json:"cpus_used"`
	GPUs       []GPU          `json:"gpus,omitempty"`
	Gres       map[string]int `json:"gres,omitempty"`
	GresUsed   map[string]int `json:"gres_used,omitempty"`
	DiskMB     int64          `json:"disk_mb,omitempty"`
	DiskUsedMB int64          `json:"disk_used_mb,omitempty"`
	// Unenforced is what the machine's stub cannot enforce (no cgroup
	// controller, no device control), as it reported at start.
	Unenforced []string `json:"unenforced,omitempty"`
}

// License is a pool-wide licence, as GET /v1/licenses returns it: how
// many the database declares and how many running instances hold.
type License struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Used  int    `json:"used"`
}

// DatabaseText is the body of POST /v1/admin/database and the answer of
// GET /v1/admin/database: a database in the declaration language.
type DatabaseText struct {
	// Filename names the text in error messages (file:line:col).
	Filename string `json:"filename,omitempty"`
	Text     string `json:"text"`
}

// LoadResponse answers a database load.
type LoadResponse struct {
	Index    uint64 `json:"index"`
	Keys     int    `json:"keys"`
	MTypes   int    `json:"mtypes"`
	Machines int    `json:"machines"`
	Queues   int    `json:"queues"`
	// Draining names machines that were declared before and are not now:
	// they take no new work and their running jobs are left alone.
	Draining []string `json:"draining,omitempty"`
}

// WhyInstance explains why one queued instance waits, as
// GET /v1/jobs/{ref}/why returns it.
type WhyInstance struct {
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	// Reason is one line a person reads: "8 machines lack key mathlab;
	// 3 have mem<=10; 1 has no free slot".
	Reason     string      `json:"reason"`
	Rejections []Rejection `json:"rejections,omitempty"`
}

// Rejection is how many machines one filter removed, and why.
type Rejection struct {
	Filter string `json:"filter"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// Server is one member of the server group, as GET /v1/servers returns it.
type Server struct {
	Name      string `json:"name"`
	Address   string `json:"address"` // Raft address
	HTTP      string `json:"http,omitempty"`
	Role      string `json:"role"` // leader, follower, candidate, unknown
	Term      uint64 `json:"term"`
	LastIndex uint64 `json:"last_index"`
	Leader    string `json:"leader"` // the leader's name as this server sees it
	Error     string `json:"error,omitempty"`
	// LastContact is how long ago this server last heard from the leader
	// ("1.2ms"), "leader" on the leader, or "never".
	LastContact string `json:"last_contact,omitempty"`
	// Healthy is true when the server answered, sees a leader, is the
	// leader or heard from it within two heartbeat timeouts, can write
	// its log, and its log holds what the leader committed.
	Healthy bool `json:"healthy"`
	// Problem says why the server is unhealthy ("log writes failing for
	// 12s: ...: no space left on device", "behind the leader by 169
	// entries"); empty when it is healthy or did not say.
	Problem string `json:"problem,omitempty"`
	// CommitIndex is the index of the last entry the server knows
	// committed; a follower compares its log with the leader's.
	CommitIndex uint64 `json:"commit_index,omitempty"`
	// Version is the server's build version ("v1.2.0-3-gabc1234"); empty
	// from a server too old to say.
	Version string `json:"version,omitempty"`
	// CommandLevel is the highest log command type the server's build
	// applies; 0 from a server too old to say.
	CommandLevel int `json:"command_level,omitempty"`
	// FilesBytes and Files are the size and number of the archives of
	// job files (copy_in, copy_out) the server keeps in its blob store.
	FilesBytes int64 `json:"files_bytes,omitempty"`
	Files      int   `json:"files,omitempty"`
}

// Facts is what a stub reports about its machine.
type Facts struct {
	Name     string   `json:"name"`
	Arch     string   `json:"arch"`
	CPUs     int      `json:"cpus"`
	MemoryMB int64    `json:"memory_mb"`
	Mounts   []string `json:"mounts,omitempty"`
	// Keys are extra keys beyond the architecture, which is always a key.
	Keys []string `json:"keys,omitempty"`
	// MType and Attrs come from the stub's init file (--init): its claimed
	// machine type and attributes such as mem, rating, nprocs.
	MType string             `json:"mtype,omitempty"`
	Attrs map[string]float64 `json:"attrs,omitempty"`
	Load  float64            `json:"load"`
	// HTTPAddr is the stub's API address, host:port.
	HTTPAddr string `json:"http_addr"`
	// GPUs are the GPUs the stub detected with nvidia-smi (none when it
	// is not installed); DiskMB is the free disk under its exec dir;
	// Unenforced says, one line each, what it cannot enforce on this
	// machine ("cpus: no cpu controller in the cgroup tree").
	GPUs       []GPU    `json:"gpus,omitempty"`
	DiskMB     int64    `json:"disk_mb,omitempty"`
	Unenforced []string `json:"unenforced,omitempty"`
	// GossipAddr is the address the stub's gossip node advertises,
	// host:port; empty when the stub does not gossip. A leader that does
	// not see the machine in its gossip pool joins it there.
	GossipAddr string `json:"gossip_addr,omitempty"`
}
