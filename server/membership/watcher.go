package membership

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty"
	"github.com/netmgr/netmgr/server/lease"
	"github.com/netmgr/netmgr/server/rejoin"
)

// absentGrace is how long a new leader waits before it declares down a
// machine that gossip has never mentioned: time for its view of the pool to
// fill in after a restart.
const absentGrace = 15 * time.Second

// Member is what the server's gossip knows of one node of the pool.
type Member struct {
	Meta  client.NodeMeta
	Alive bool // false once memberlist reported it dead or gone
	// Left is true when it went after saying so in its metadata (a stub's
	// clean shutdown), not by failing.
	Left bool
}

// Config is what a Watcher needs of its server besides its duty.Handle.
type Config struct {
	// Pool returns a copy of the gossip pool as the server sees it, by
	// member name.
	Pool func() map[string]Member
	// PoolVersion returns a number that grows whenever the pool changes:
	// a pass that finds it, and the database's machines, as the last
	// full pass did repeats that pass's outcome without copying the
	// pool (Watcher.Reconcile). Nil: every pass is full.
	PoolVersion func() uint64
	// Leases is this leadership's lease table: a restarting machine is up
	// again once its new stub renewed (lease.Table.Back), and a join
	// counts as a renewal (lease.Table.Touch). Nil: no restarting machine
	// joins and no join touches a lease.
	Leases *lease.Table
	// RenewalFacts returns, and forgets, the facts the stub of machine
	// at addr sent with its lease renewals, waiting a while for them;
	// false when none came. Nil: the facts are always fetched.
	RenewalFacts func(ctx context.Context, machine, addr string) (client.Facts, bool)
	// StubClient returns a client for the stub of machine at addr.
	StubClient func(machine, addr string) (*client.StubClient, error)
	// MachineFacts converts the facts a stub reports to the log's form.
	MachineFacts func(client.Facts) fsm.MachineFacts
	// Rejoin is what the term's rejoin.Rejoiner needs.
	Rejoin rejoin.Config
	// Raft is the server's Raft, whose configuration gains the voters;
	// nil in tests that add none.
	Raft Raft
	// Admit is the check a would-be voter passes first when Raft runs
	// over TLS; nil over another transport (plain TCP, or a test's in
	// memory one), where addresses prove nothing and voters are added
	// at once.
	Admit *Admit
	// StubJoins counts the joins committed, by where the facts came
	// from: "renewal" or "fetched".
	StubJoins *promtext.CounterVec
}

// Watcher is one leadership's membership duty. Its methods are safe for
// concurrent use; the joins and admission checks it starts run in
// goroutines that Wait waits for.
type Watcher struct {
	h      duty.Handle
	cfg    Config
	since  time.Time // when this leadership began
	wg     sync.WaitGroup
	rejoin *rejoin.Rejoiner // joins the machines gossip lacks

	mu      sync.Mutex // guards pending and joined
	pending map[string]bool
	// joined is set when a join ends, however it ended: the next pass
	// looks at the pool again (a refused or failed join changes nothing
	// a version counts).
	joined bool

	memo *passMemo // what the last full pass found; nil: look again
}

// passMemo is what a full pass found when it started nothing: a pass
// that sees the same pool and machines repeats it, at the cost of two
// version reads instead of a copy of the pool and a look at every
// machine (at 10,000 machines, several times a second, a tenth of an
// idle leader's CPU).
type passMemo struct {
	poolVersion     uint64 // Config.PoolVersion
	epoch, machines uint64 // fsm.View.Epoch, fsm.View.MachinesVersion
	at              time.Time
	unseen          map[string]string // for the rejoin round
	servers         map[string]Member // the pool's servers, for the voters
}

// New returns the membership duty of a leadership that begins now.
func New(h duty.Handle, cfg Config) *Watcher {
	return &Watcher{
		h: h, cfg: cfg, since: time.Now(),
		rejoin:  rejoin.New(h.Log(), cfg.Rejoin),
		pending: make(map[string]bool),
	}
}

// Wait blocks until every join and check this watcher started has
// returned.
func (m *Watcher) Wait() {
	m.wg.Wait()
	m.rejoin.Wait()
}

// Reconcile makes one pass: the joins (in the background), the leaves,
// a rejoin round and the voters the pool calls for now. When neither the
// pool nor any machine changed since a full pass that started nothing,
// nor did time move the pass past absentGrace, that pass's outcome
// stands and only the rejoin round and the voters run again.
func (m *Watcher) Reconcile(ctx context.Context) {
	now := time.Now()
	var poolVersion, epoch, machines uint64
	if m.cfg.PoolVersion != nil {
		// Before the copy: a change after it makes the next pass full.
		poolVersion = m.cfg.PoolVersion()
	}
	m.h.Read(func(v fsm.View) { epoch, machines = v.Epoch(), v.MachinesVersion() })
	if memo := m.repeats(poolVersion, epoch, machines, now); memo != nil {
		m.rejoin.Kick(ctx, memo.unseen, now)
		m.addServers(ctx, memo.servers)
		return
	}
	pool := m.cfg.Pool()
	var (
		joins   []string
		leaves  []leave
		unseen  map[string]string
		waiting bool // a restarting machine waits for its new stub's renewal
	)
	m.h.Read(func(v fsm.View) {
		epoch, machines = v.Epoch(), v.MachinesVersion()
		for name, mem := range pool {
			if mem.Meta.Role != client.RoleStub || !mem.Alive {
				continue
			}
			mc, ok := v.Machine(name)
			if ok && mc.State == fsm.MachineRestarting && (m.cfg.Leases == nil || !m.cfg.Leases.Back(name)) {
				// Alive in gossip may still be the stub that is
				// stopping: the machine is up again only once its new
				// stub has renewed (lease.Table.Back).
				waiting = true
				continue
			}
			if !ok || mc.State != fsm.MachineUp || mc.Addr != mem.Meta.HTTP {
				joins = append(joins, name)
			}
		}
		unseen, leaves = lookAtMachines(v, pool, time.Since(m.since) > absentGrace)
	})
	m.rejoin.Kick(ctx, unseen, now)
	m.remember(poolVersion, epoch, machines, now, unseen, pool, m.cfg.PoolVersion != nil && len(joins) == 0 && len(leaves) == 0 && !waiting)
	slices.Sort(joins)
	slices.SortFunc(leaves, func(a, b leave) int { return strings.Compare(a.name, b.name) })
	for _, name := range joins {
		m.join(ctx, name, pool[name].Meta.HTTP)
	}
	log := m.h.Log()
	for _, l := range leaves {
		level := slog.LevelWarn
		if l.clean {
			level = slog.LevelInfo
		}
		log.Log(ctx, level, "machine leaves the pool", "machine", l.name, "reason", l.reason)
		if _, err := m.h.Apply(fsm.StubLeaveType, fsm.StubLeave{At: time.Now().UTC(), Machine: l.name, Reason: l.reason}); err != nil {
			log.Warn("commit stub leave failed", "machine", l.name, "err", err)
		}
	}
	m.addServers(ctx, pool)
}

// repeats returns the memo of the last full pass when a pass now, seeing
// these versions, would find what it found; nil when it must look.
func (m *Watcher) repeats(poolVersion, epoch, machines uint64, now time.Time) *passMemo {
	m.mu.Lock()
	defer m.mu.Unlock()
	memo := m.memo
	// Past absentGrace a machine gossip never mentioned leaves: the
	// first pass after it looks.
	crossed := memo != nil && memo.at.Sub(m.since) <= absentGrace && now.Sub(m.since) > absentGrace
	if memo != nil && !m.joined && !crossed &&
		memo.poolVersion == poolVersion && memo.epoch == epoch && memo.machines == machines {
		return memo
	}
	m.joined = false // the full pass to come sees every join that ended
	return nil
}

// remember keeps what a full pass found, when keep says it may stand
// (the pass started no join or leave, and no machine waits for its
// lease); otherwise the next pass looks again.
func (m *Watcher) remember(poolVersion, epoch, machines uint64, at time.Time, unseen map[string]string, pool map[string]Member, keep bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !keep {
		m.memo = nil
		return
	}
	servers := make(map[string]Member)
	for name, mem := range pool {
		if mem.Meta.Role == client.RoleServer {
			servers[name] = mem
		}
	}
	m.memo = &passMemo{poolVersion: poolVersion, epoch: epoch, machines: machines, at: at, unseen: unseen, servers: servers}
}

// leave is a machine that leaves the pool, and why.
type leave struct {
	name, reason string
	clean        bool // the machine said it was going: no warning
}

// lookAtMachines looks once at every machine of the database against
// the gossip pool and returns the API address of each that gossip does
// not hold alive as a stub (not in pool, or failed or gone there), for
// the rejoin round, and those that leave: up or unreachable in the
// database but failed, gone or (pastGrace) absent in gossip. It looks in
// no order and copies nothing of the database: while a large pool
// joins, the database gains a machine between nearly every two passes,
// and its sorted list (fsm.View.Machines) was rebuilt and copied twice
// a pass. The caller sorts the leaves.
func lookAtMachines(v fsm.View, pool map[string]Member, pastGrace bool) (map[string]string, []leave) {
	unseen := make(map[string]string)
	var leaves []leave
	for mc := range v.EachMachine() {
		mem, ok := pool[mc.Name]
		if !(ok && mem.Alive && mem.Meta.Role == client.RoleStub) && mc.Addr != "" {
			unseen[mc.Name] = mc.Addr
		}
		// An unreachable machine (its lease expired first, as it does
		// after a crash: 4 s against gossip's 10 s or more) still goes
		// down when gossip gives it up, so that its unknown work is
		// declared lost.
		if mc.State != fsm.MachineUp && mc.State != fsm.MachineUnreachable {
			continue
		}
		switch {
		case ok && !mem.Alive && mem.Left:
			leaves = append(leaves, leave{mc.Name, "the machine left the gossip pool", true})
		case ok && !mem.Alive:
			leaves = append(leaves, leave{mc.Name, "gossip reports the machine failed", false})
		case !ok && pastGrace:
			leaves = append(leaves, leave{mc.Name, "machine is not in the gossip pool", false})
		}
	}
	return unseen, leaves
}
