package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/rejoin"
)

// absentGrace is how long a new leader waits before it declares down a
// machine that gossip has never mentioned: time for its view of the pool to
// fill in after a restart.
const absentGrace = 15 * time.Second

// membership turns the gossip pool into database changes: StubJoin for a
// live stub the database does not hold as up, StubLeave for an up machine
// gossip reports failed or has never seen, and AddVoter for a live server
// outside the Raft configuration. It also has the machines of the database
// that gossip does not hold alive joined (server/rejoin), so that a leader
// whose pool was split from its stubs' finds them within absentGrace.
type membership struct {
	s      *Server
	since  time.Time // when this leadership began
	wg     sync.WaitGroup
	rejoin *rejoin.Rejoiner // joins the machines gossip lacks (server/rejoin)

	mu      sync.Mutex // guards pending
	pending map[string]bool
}

func newMembership(s *Server) *membership {
	r := rejoin.New(s.log, rejoin.Config{
		StubClient: s.stubClient,
		Join:       func(addrs []string) (int, error) { return s.gossip.ml.Join(addrs) },
		Members:    func() int { return s.gossip.ml.NumMembers() },
	})
	return &membership{s: s, since: time.Now(), rejoin: r, pending: make(map[string]bool)}
}

// wait blocks until every join this watcher started has returned.
func (m *membership) wait() {
	m.wg.Wait()
	m.rejoin.Wait()
}

func (m *membership) reconcile(ctx context.Context) {
	pool := m.s.gossip.snapshot()
	type leave struct {
		name, reason string
		clean        bool // the machine said it was going: no warning
	}
	var (
		joins  []string
		leaves []leave
		unseen map[string]string
	)
	st := m.s.leader.Load()
	m.s.fsm.Read(func(v fsm.View) {
		unseen = unseenMachines(v, pool)
		for name, mem := range pool {
			if mem.Meta.Role != client.RoleStub || !mem.Alive {
				continue
			}
			mc, ok := v.Machine(name)
			if ok && mc.State == fsm.MachineRestarting && (st == nil || !st.leases.Back(name)) {
				// Alive in gossip may still be the stub that is
				// stopping: the machine is up again only once its new
				// stub has renewed (lease.Table.Back).
				continue
			}
			if !ok || mc.State != fsm.MachineUp || mc.Addr != mem.Meta.HTTP {
				joins = append(joins, name)
			}
		}
		for _, mc := range v.Machines() {
			// An unreachable machine (its lease expired first, as it does
			// after a crash: 4 s against gossip's 10 s or more) still goes
			// down when gossip gives it up, so that its unknown work is
			// declared lost.
			if mc.State != fsm.MachineUp && mc.State != fsm.MachineUnreachable {
				continue
			}
			mem, ok := pool[mc.Name]
			switch {
			case ok && !mem.Alive && mem.Left:
				leaves = append(leaves, leave{mc.Name, "the machine left the gossip pool", true})
			case ok && !mem.Alive:
				leaves = append(leaves, leave{mc.Name, "gossip reports the machine failed", false})
			case !ok && time.Since(m.since) > absentGrace:
				leaves = append(leaves, leave{mc.Name, "machine is not in the gossip pool", false})
			}
		}
	})
	m.rejoin.Kick(ctx, unseen, time.Now())
	slices.Sort(joins)
	for _, name := range joins {
		m.join(ctx, name, pool[name].Meta.HTTP)
	}
	for _, l := range leaves {
		level := slog.LevelWarn
		if l.clean {
			level = slog.LevelInfo
		}
		m.s.log.Log(ctx, level, "machine leaves the pool", "machine", l.name, "reason", l.reason)
		if _, err := m.s.apply(fsm.StubLeaveType, fsm.StubLeave{At: time.Now().UTC(), Machine: l.name, Reason: l.reason}); err != nil {
			m.s.log.Warn("commit stub leave failed", "machine", l.name, "err", err)
		}
	}
	m.addServers(ctx, pool)
}

// unseenMachines returns the API address of every machine of the
// database, whatever its state, that gossip does not hold alive: not in
// pool, or failed or gone there.
func unseenMachines(v fsm.View, pool map[string]member) map[string]string {
	out := make(map[string]string)
	for _, mc := range v.Machines() {
		if mem, ok := pool[mc.Name]; ok && mem.Alive && mem.Meta.Role == client.RoleStub {
			continue
		}
		if mc.Addr != "" {
			out[mc.Name] = mc.Addr
		}
	}
	return out
}

// join fetches a stub's facts and commits StubJoin, in the background.
func (m *membership) join(ctx context.Context, name, addr string) {
	m.mu.Lock()
	if m.pending[name] {
		m.mu.Unlock()
		return
	}
	m.pending[name] = true
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			delete(m.pending, name)
			m.mu.Unlock()
		}()
		facts, source, err := m.joinFacts(ctx, name, addr)
		if err != nil {
			m.s.log.Warn("fetch stub facts failed", "machine", name, "err", err)
			return
		}
		facts.Name, facts.HTTPAddr = name, addr
		res, err := m.s.apply(fsm.StubJoinType, fsm.StubJoin{At: time.Now().UTC(), Machine: factsFromWire(facts)})
		switch {
		case err != nil:
			m.s.log.Warn("commit stub join failed", "machine", name, "err", err)
		case res.Err != nil:
			m.s.log.Warn("stub join refused", "machine", name, "err", res.Err)
		default:
			// A machine back from a crash joins before its first renewal
			// arrives: count the join as one, or the renewal from before
			// the crash expires its lease a second time. Expiry only moves
			// later, so no stub's lease is cut short.
			if st := m.s.leader.Load(); st != nil {
				st.leases.Touch(name, time.Now())
			}
			m.s.metrics.stubJoins.WithLabelValues(source).Inc()
			m.s.log.Info("machine joined the pool", "machine", name, "arch", facts.Arch, "cpus", facts.CPUs, "facts", source)
		}
	}()
}

// joinFacts returns the facts to join machine name, whose stub gossips
// the API address addr, and where they came from (the label of
// stub_joins_total): those its renewals carried (joinFacts), waiting up
// to joinFactsWait for them, else fetched from the stub.
func (m *membership) joinFacts(ctx context.Context, name, addr string) (client.Facts, string, error) {
	if st := m.s.leader.Load(); st != nil && st.facts != nil {
		if f, ok := st.facts.wait(ctx, name, addr, joinFactsWait); ok {
			return f, "renewal", nil
		}
	}
	c, err := m.s.stubClient(name, addr)
	if err != nil {
		return client.Facts{}, "", fmt.Errorf("stub address %s unusable: %w", addr, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	f, err := c.Facts(fctx)
	if err != nil {
		return client.Facts{}, "", fmt.Errorf("fetch facts from %s: %w", addr, err)
	}
	return f, "fetched", nil
}

// addServers adds live servers that gossip knows and Raft does not, once
// each proved itself a server when the group runs TLS (admitServer,
// raft_admit.go).
func (m *membership) addServers(ctx context.Context, pool map[string]member) {
	f := m.s.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	inConfig := make(map[string]bool)
	for _, srv := range f.Configuration().Servers {
		inConfig[string(srv.ID)] = true
	}
	for name, mem := range pool {
		if mem.Meta.Role != client.RoleServer || !mem.Alive || inConfig[name] || mem.Meta.Raft == "" {
			continue
		}
		m.admitServer(ctx, name, mem.Meta.Raft)
	}
}

// addVoter adds name at addr to the Raft configuration as a voter.
func (s *Server) addVoter(name, addr string) {
	s.log.Info("adding server to the raft group", "server", name, "raft", addr)
	if err := s.raft.AddVoter(raft.ServerID(name), raft.ServerAddress(addr), 0, 5*time.Second).Error(); err != nil {
		s.log.Warn("add voter failed", "server", name, "err", err)
	}
}
