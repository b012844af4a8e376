package fsm

import (
	"fmt"
	"maps"
	"slices"
)

// Database is the administrator's declarations, as the log records them.
// Slices keep declaration order so the database prints back as written.
type Database struct {
	Keys     []DeclaredKey     `json:"keys,omitempty"`
	MTypes   []DeclaredMType   `json:"mtypes,omitempty"`
	Machines []DeclaredMachine `json:"machines,omitempty"`
	Queues   []DeclaredQueue   `json:"queues,omitempty"`
	Admins   []string          `json:"admins,omitempty"`
	// AllowRootJobs lets root on a machine of the pool run jobs as root
	// (the allow_root_jobs declaration); nobody else ever may.
	AllowRootJobs bool `json:"allow_root_jobs,omitempty"`
	// Accounts are the fair-share accounts (`account NAME = {share=N,
	// users={...}}`); a user in none is in queue.DefaultAccount. Shares
	// are the users' own shares within their accounts (`share USER = N`,
	// 1 when not declared). HalfLifeSeconds is fairshare_halflife, 0 for
	// queue.DefaultHalfLife. All three since snapshot version 13; a
	// database that sets any is loaded only when every server applies
	// FairShareStartType (fairshare.go).
	Accounts        []DeclaredAccount `json:"accounts,omitempty"`
	Shares          []DeclaredShare   `json:"shares,omitempty"`
	HalfLifeSeconds int64             `json:"halflife_seconds,omitempty"`
	// Licenses are the pool-wide licences (license NAME = N); a database
	// that declares any is loaded only when every server applies
	// SubmitResourcesType.
	Licenses []DeclaredLicense `json:"licenses,omitempty"`
}

// DeclaredAccount is an `account NAME = {share=N, users={...}}`
// declaration: a group of users whose usage is charged, and whose work is
// ordered, together.
type DeclaredAccount struct {
	Name  string   `json:"name"`
	Share int64    `json:"share,omitempty"` // 0 means 1
	Users []string `json:"users,omitempty"`
}

// DeclaredShare is a `share USER = N` declaration.
type DeclaredShare struct {
	User  string `json:"user"`
	Share int64  `json:"share"`
}

// DeclaredKey is a `key NAME /* comment */` declaration.
type DeclaredKey struct {
	Name    string `json:"name"`
	Comment string `json:"comment,omitempty"`
}

// DeclaredMType is an `mtype NAME = {...}` declaration.
type DeclaredMType struct {
	Name   string             `json:"name"`
	Keys   []string           `json:"keys,omitempty"`
	Attrs  map[string]float64 `json:"attrs,omitempty"`
	Mounts []string           `json:"mounts,omitempty"`
	// Owner is the owner-policy settings (dblang.MachineOwnerSettings) in
	// their canonical text; since snapshot version 9.
	Owner map[string]string `json:"owner,omitempty"`
}

// DeclaredMachine is a `machine NAME = ...` declaration.
type DeclaredMachine struct {
	Name   string             `json:"name"`
	MType  string             `json:"mtype,omitempty"`
	Keys   []string           `json:"keys,omitempty"`
	Attrs  map[string]float64 `json:"attrs,omitempty"`
	Mounts []string           `json:"mounts,omitempty"`
	// Owner is the machine's own owner-policy settings; since snapshot
	// version 9.
	Owner map[string]string `json:"owner,omitempty"`
}

// DeclaredQueue is an `add_q NAME = {...}` declaration; 0 means no limit.
type DeclaredQueue struct {
	Name          string `json:"name"`
	Priority      int    `json:"priority,omitempty"`
	MaxSize       int64  `json:"max_size,omitempty"`
	MaxActive     int64  `json:"max_active,omitempty"`
	MaxRunSeconds int64  `json:"max_run_seconds,omitempty"`
	MaxMemMB      int64  `json:"max_mem_mb,omitempty"`
	// KillGraceSeconds is kill_grace, the time from the SIGTERM that ends
	// one of the queue's attempts to the SIGKILL; 0 for the default.
	// Since snapshot version 10; a database that sets it is loaded only
	// when every server applies SubmitLimitsType.
	KillGraceSeconds int64 `json:"kill_grace_seconds,omitempty"`
	// Policy is the queue's placement policy (policy=, dblang.Policies;
	// "" is backfill). Since snapshot version 11; a database that sets it
	// is loaded only when every server applies SubmitGangType.
	Policy string `json:"policy,omitempty"`
	// Preempt is preempt= (PreemptRequeue or PreemptSuspend): the
	// queue's jobs waiting on a full pool take slots from strictly
	// lower-priority queues' running instances (Preempt entries). Since
	// snapshot version 15; a database that sets it is loaded only when
	// every server applies PreemptType.
	Preempt string `json:"preempt,omitempty"`
	// MaxUserActive and MaxUserQueued are nq_maxuser_active and
	// nq_maxuser_queued: one user's most instances active at once and
	// unfinished jobs in the queue. Since snapshot version 13; a database
	// that sets them is loaded only when every server applies
	// FairShareStartType.
	MaxUserActive int64 `json:"max_user_active,omitempty"`
	MaxUserQueued int64 `json:"max_user_queued,omitempty"`
	// Interactive marks the queue of interactive work (interactive=yes):
	// netexec -i and --pty jobs naming no queue are submitted to it, and
	// its waiting work starts before every other queue's. At most one
	// queue is marked. Since snapshot version 15; a database that sets it
	// is loaded only when every server applies SessionEventType.
	Interactive bool `json:"interactive,omitempty"`
	// Owner is the queue's desktop policy (dblang.QueueOwnerSettings),
	// overriding the machine's for its jobs; since snapshot version 9.
	Owner map[string]string `json:"owner,omitempty"`
	// Prime is the queue's prime time (primetime.go): windows and the
	// values in force inside them; since snapshot version 15.
	Prime *DeclaredPrime `json:"prime,omitempty"`
}

// check re-checks the invariants the rest of the FSM relies on: unique
// names and machine types that exist. The server validated the text with
// positions; this only guards the state.
func (db *Database) check() error {
	seen := map[string]bool{}
	for _, k := range db.Keys {
		if k.Name == "" || seen["key "+k.Name] {
			return fmt.Errorf("%w: key %q empty or declared twice", ErrInvalidDatabase, k.Name)
		}
		seen["key "+k.Name] = true
	}
	for _, t := range db.MTypes {
		if t.Name == "" || seen["mtype "+t.Name] {
			return fmt.Errorf("%w: mtype %q empty or declared twice", ErrInvalidDatabase, t.Name)
		}
		seen["mtype "+t.Name] = true
	}
	for _, m := range db.Machines {
		if m.Name == "" || seen["machine "+m.Name] {
			return fmt.Errorf("%w: machine %q empty or declared twice", ErrInvalidDatabase, m.Name)
		}
		if m.MType != "" && !seen["mtype "+m.MType] {
			return fmt.Errorf("%w: machine %q has unknown mtype %q", ErrInvalidDatabase, m.Name, m.MType)
		}
		seen["machine "+m.Name] = true
	}
	for _, l := range db.Licenses {
		if l.Name == "" || l.Count < 1 || seen["license "+l.Name] {
			return fmt.Errorf("%w: license %q empty, below 1 or declared twice", ErrInvalidDatabase, l.Name)
		}
		seen["license "+l.Name] = true
	}
	for _, q := range db.Queues {
		if q.Name == "" || seen["queue "+q.Name] {
			return fmt.Errorf("%w: queue %q empty or declared twice", ErrInvalidDatabase, q.Name)
		}
		if !validPolicy(q.Policy) {
			return fmt.Errorf("%w: queue %q has unknown policy %q", ErrInvalidDatabase, q.Name, q.Policy)
		}
		if !validPreempt(q.Preempt) {
			return fmt.Errorf("%w: queue %q has unknown preempt %q", ErrInvalidDatabase, q.Name, q.Preempt)
		}
		if q.MaxUserActive < 0 || q.MaxUserQueued < 0 {
			return fmt.Errorf("%w: queue %q has a negative per-user limit", ErrInvalidDatabase, q.Name)
		}
		if q.Interactive && db.InteractiveQueue() != q.Name {
			return fmt.Errorf("%w: queues %q and %q are both marked interactive", ErrInvalidDatabase, db.InteractiveQueue(), q.Name)
		}
		if q.Prime != nil && len(q.Prime.Windows) == 0 {
			return fmt.Errorf("%w: queue %q has a prime time without a window", ErrInvalidDatabase, q.Name)
		}
		seen["queue "+q.Name] = true
	}
	return db.checkShares(seen)
}

// InteractiveQueue names the queue marked interactive=yes, where
// interactive jobs that name no queue go; "" when none is.
func (db *Database) InteractiveQueue() string {
	for _, q := range db.Queues {
		if q.Interactive {
			return q.Name
		}
	}
	return ""
}

func (db *Database) mtype(name string) (*DeclaredMType, bool) {
	for i := range db.MTypes {
		if db.MTypes[i].Name == name {
			return &db.MTypes[i], true
		}
	}
	return nil, false
}

func (db *Database) machine(name string) (*DeclaredMachine, bool) {
	for i := range db.Machines {
		if db.Machines[i].Name == name {
			return &db.Machines[i], true
		}
	}
	return nil, false
}

// Queue returns a declared queue by name.
func (db *Database) Queue(name string) (*DeclaredQueue, bool) {
	for i := range db.Queues {
		if db.Queues[i].Name == name {
			return &db.Queues[i], true
		}
	}
	return nil, false
}

// OwnerSettings returns the owner-policy settings the database gives the
// machine whose facts are f, merged as attributes are: a declared
// machine's mtype's overridden by its own, with declared true; for a
// machine the database does not declare, those of the mtype its init file
// claims, with declared false (the init file's own settings then win on
// the stub, as its attributes win over that mtype's here). Nil when the
// database gives none.
func (db *Database) OwnerSettings(f *MachineFacts) (settings map[string]string, declared bool) {
	return indexedDB{db: db}.ownerSettings(f)
}

// ownerSettings is OwnerSettings through d's index.
func (d indexedDB) ownerSettings(f *MachineFacts) (settings map[string]string, isDeclared bool) {
	if decl, ok := d.machine(f.Name); ok {
		var fromType map[string]string
		if t, ok := d.mtype(decl.MType); ok {
			fromType = t.Owner
		}
		return mergeOwner(fromType, decl.Owner), true
	}
	if t, ok := d.mtype(f.MType); ok {
		return mergeOwner(t.Owner, nil), false
	}
	return nil, false
}

// mergeOwner returns a new map of a overridden by b; nil when both are
// empty.
func mergeOwner(a, b map[string]string) map[string]string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// IsAdmin reports whether user is a declared admin_id.
func (db *Database) IsAdmin(user string) bool { return slices.Contains(db.Admins, user) }

// Effective is a machine's attributes as the scheduler matches them: the
// stub's detected facts, overlaid by its init file, overlaid by the
// database's declaration. Keys and mounts add up; attributes are replaced
// by the later source. Derived, never snapshotted.
type Effective struct {
	MType    string
	Keys     []string // sorted, distinct, including the architecture
	Attrs    map[string]float64
	Mounts   []string // sorted, distinct
	Slots    int
	Rating   float64
	MemoryMB int64
	Declared bool
	// GPUs, Gres and DiskMB are the machine's countable resources
	// (resources.go, effectiveResources).
	GPUs   []GPU
	Gres   map[string]int
	DiskMB int64
}

// effective computes a machine's Effective attributes.
//
// Precedence: detected < init file < database. The administrator's
// declaration is the site's policy (a workstation lent with one slot though
// it has eight CPUs), the init file is the machine owner's claim, and
// detection knows only the hardware.
func (db indexedDB) effective(f *MachineFacts) Effective {
	e := Effective{
		MType: f.MType,
		Attrs: map[string]float64{"mem": float64(f.MemoryMB), "nprocs": float64(max(f.CPUs, 1)), "rating": 1},
	}
	keys := append([]string{f.Arch}, f.Keys...)
	mounts := slices.Clone(f.Mounts)
	decl, declared := db.machine(f.Name)
	if declared && decl.MType != "" {
		e.MType = decl.MType
	}
	if t, ok := db.mtype(e.MType); ok {
		keys = append(keys, t.Keys...)
		mounts = append(mounts, t.Mounts...)
		maps.Copy(e.Attrs, t.Attrs)
	}
	maps.Copy(e.Attrs, f.Attrs)
	if declared {
		e.Declared = true
		keys = append(keys, decl.Keys...)
		mounts = append(mounts, decl.Mounts...)
		if t, ok := db.mtype(decl.MType); ok {
			maps.Copy(e.Attrs, t.Attrs)
		}
		maps.Copy(e.Attrs, decl.Attrs)
	}
	slices.Sort(keys)
	e.Keys = slices.Compact(keys)
	slices.Sort(mounts)
	e.Mounts = slices.Compact(mounts)
	e.Slots = int(clamp(e.Attrs["nprocs"], 1, maxSlots))
	e.Rating = clamp(e.Attrs["rating"], 0, maxRating)
	if e.Rating == 0 {
		e.Rating = 1
	}
	e.MemoryMB = int64(clamp(e.Attrs["mem"], 0, maxMemoryMB))
	effectiveResources(&e, f)
	return e
}

// Bounds for attributes turned into integers. Go leaves the conversion of
// an out-of-range float to an integer to the platform (amd64 and arm64
// disagree), so every value is clamped first and replicas on different
// hardware agree.
const (
	maxSlots    = 1 << 20
	maxRating   = 1e9
	maxMemoryMB = 1 << 40
)

// clamp bounds f to [lo, hi]; NaN becomes lo.
func clamp(f, lo, hi float64) float64 {
	switch {
	case f != f || f < lo:
		return lo
	case f > hi:
		return hi
	}
	return f
}
