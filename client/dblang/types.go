package dblang

import "strconv"

// Pos is a place in a source file. Line and Col are 1-based; Col counts
// characters (runes), not bytes, and a tab is one column.
type Pos struct {
	File      string
	Line, Col int
}

// String formats p as "FILE:LINE:COL", or "LINE:COL" when File is empty.
func (p Pos) String() string {
	s := strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
	if p.File != "" {
		s = p.File + ":" + s
	}
	return s
}

// Database is a parsed database file: the declarations of each kind in the
// order the file gives them. Names are unique within a kind; a key and an
// mtype may share a name (the paper's mips and hpux do).
type Database struct {
	Keys     []Key
	MTypes   []MType
	Machines []Machine
	Queues   []Queue
	// Admins are the admin_id logins, in file order.
	Admins []string
	// AllowRootJobs is set by an allow_root_jobs declaration: root,
	// submitting from a machine of the pool, may run jobs as root. It is
	// false, refusing every root job, unless the file says so.
	AllowRootJobs bool
	// Accounts are the fair-share accounts, in file order; Shares the
	// users' own shares (`share alice = 2`); HalfLifeSeconds is
	// fairshare_halflife, 0 when not given (the server's default, 7 days).
	Accounts        []Account
	Shares          []Share
	HalfLifeSeconds int64
	// Licenses are the pool-wide licences (license NAME = N), in file
	// order.
	Licenses []License
}

// Account is an `account NAME = {share=N, users={USER, ...}}`
// declaration: users whose usage is charged together and whose work is
// ordered together by fair share.
type Account struct {
	Name  string
	Share int64 // 0 when not given: 1
	Users []string
	Pos   Pos
}

// Share is a `share USER = N` declaration: the user's share within its
// account (1 when not declared).
type Share struct {
	User  string
	Share int64
	Pos   Pos
}

// License is a `license NAME = N` declaration: at most N of NAME are
// held at once across the pool (netexec --license NAME:K holds K per
// instance from its start to its end).
type License struct {
	Name  string
	Count int
	Pos   Pos
}

// Key is a `key NAME /* COMMENT */` declaration.
type Key struct {
	Name string
	// Comment is the text of the comments inside the declaration, trimmed
	// and joined by single spaces; "" when there is none.
	Comment string
	Pos     Pos
}

// MType is an `mtype NAME = {...}` declaration: a machine type.
type MType struct {
	Name   string
	Keys   []string           // in file order
	Attrs  map[string]float64 // attr=NUMBER items, such as mem and rating
	Mounts []string           // in file order
	// Owner holds the owner-policy settings (MachineOwnerSettings) by
	// name, in canonical text (see owner.go); nil when none.
	Owner map[string]string
	Pos   Pos
}

// Machine is a `machine NAME = MTYPE` or `machine NAME = {...}` declaration.
// Its own Keys, Attrs and Mounts are those written in its declaration;
// Resolve merges them with its mtype's.
type Machine struct {
	Name   string
	MType  string // "" when the machine has no mtype
	Keys   []string
	Attrs  map[string]float64
	Mounts []string
	// Owner is the machine's own owner-policy settings; its mtype's are
	// merged by Resolve.
	Owner map[string]string
	Pos   Pos
}

// Queue is an `add_q NAME = {...}` declaration: a batch queue. A zero limit
// means no limit.
type Queue struct {
	Name string
	// Priority orders queues (priority=N); higher runs first.
	Priority int
	// MaxSize is nq_maxsize, the most jobs the queue holds.
	MaxSize int64
	// MaxActive is nq_maxactive, the most of its jobs running at once.
	MaxActive int64
	// MaxRunSeconds is nq_maxrun, an instance's longest run. The language
	// writes it in minutes, as the paper does (nq_maxrun=200), or as a
	// whole number of seconds, minutes or hours with a unit (90s, 2h).
	MaxRunSeconds int64
	// MaxMemMB is nq_maxmem, the memory one job may use, in MB.
	MaxMemMB int64
	// KillGraceSeconds is kill_grace: the time from the SIGTERM that ends
	// one of its jobs (a time limit, netkill) to the SIGKILL; 0 means the
	// default of 10 seconds.
	KillGraceSeconds int64
	// MaxUserActive is nq_maxuser_active, the most of its instances one
	// user runs at once; MaxUserQueued is nq_maxuser_queued, the most
	// unfinished jobs one user holds in it.
	MaxUserActive int64
	MaxUserQueued int64
	// Interactive is interactive=yes: the queue of interactive jobs
	// (netexec -i, --pty) that name none, whose waiting work starts
	// before every other queue's, whatever their priority (the NAS
	// requirement's fast turnaround). At most one queue is marked.
	Interactive bool
	// Policy is the queue's placement policy (policy=): PolicyBackfill
	// (also ""), PolicyGang, PolicyDedicated or PolicySpread.
	Policy string
	// Preempt is preempt=: PreemptRequeue or PreemptSuspend when the
	// queue's jobs take slots from strictly lower-priority queues' running
	// instances on a full pool, "" when they wait.
	Preempt string
	// Owner is the queue's desktop policy (QueueOwnerSettings): how its
	// jobs are treated when a machine's owner returns, overriding the
	// machine's; nil when the queue leaves it to the machine.
	Owner map[string]string
	// Prime is the queue's prime time (prime={...}, prime.go): windows
	// and the values that apply inside them; nil when it has none.
	Prime *Prime
	Pos   Pos
}

// Init is a stub's init file (netmgr stub --init FILE): the machine type it
// claims and its own keys, attributes and mounts.
type Init struct {
	MType  string
	Keys   []string
	Attrs  map[string]float64 // mem, rating, nprocs and any other name=NUMBER
	Mounts []string
	// Owner is the owner-policy settings the init file gives
	// (MachineOwnerSettings); nil when none.
	Owner map[string]string
}

// Resolved is what a machine (or an mtype) has once its mtype is merged in.
type Resolved struct {
	MType string
	// Keys is the sorted union of the mtype's keys and the machine's.
	Keys []string
	// Attrs are the mtype's attributes overridden by the machine's; never
	// nil.
	Attrs map[string]float64
	// Mounts is the sorted union of the mtype's mounts and the machine's.
	Mounts []string
	// Owner is the mtype's owner-policy settings overridden by the
	// machine's; nil when neither gives any.
	Owner map[string]string
}

// FindKey returns the key declaration called name, or nil.
func (db *Database) FindKey(name string) *Key {
	for i := range db.Keys {
		if db.Keys[i].Name == name {
			return &db.Keys[i]
		}
	}
	return nil
}

// FindMType returns the mtype declaration called name, or nil.
func (db *Database) FindMType(name string) *MType {
	for i := range db.MTypes {
		if db.MTypes[i].Name == name {
			return &db.MTypes[i]
		}
	}
	return nil
}

// FindMachine returns the machine declaration called name, or nil.
func (db *Database) FindMachine(name string) *Machine {
	for i := range db.Machines {
		if db.Machines[i].Name == name {
			return &db.Machines[i]
		}
	}
	return nil
}

// FindQueue returns the queue declaration called name, or nil.
func (db *Database) FindQueue(name string) *Queue {
	for i := range db.Queues {
		if db.Queues[i].Name == name {
			return &db.Queues[i]
		}
	}
	return nil
}
