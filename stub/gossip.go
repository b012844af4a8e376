package stub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client"
	gossipnode "github.com/netmgr/netmgr/internal/gossip"
)

const (
	// loadInterval is how often the load average in the metadata is
	// refreshed; loadDelta is the change that is worth gossiping.
	loadInterval = 2 * time.Second
	loadDelta    = 0.05
	// leaveTimeout bounds how long Shutdown waits for the leave to spread.
	leaveTimeout = time.Second
	// updateTimeout bounds how long a metadata update waits to spread.
	updateTimeout = time.Second
)

// memberEvent is a copy of what a memberlist callback reported.
type memberEvent struct {
	name string
	addr string // the member's gossip address, host:port
	meta []byte
	left bool
}

// gossip is the stub's membership in the memberlist pool: it gossips the
// stub's metadata and feeds the servers it sees to the server list. The
// node itself is internal/gossip's.
type gossip struct {
	log *slog.Logger
	// ml is the memberlist node, shared with the servers' code.
	ml *gossipnode.Node
	// addr is the gossip address the node advertises, host:port.
	addr    string
	servers *serverList
	peers   *peerList
	facts   *factSource
	wake    chan struct{} // cap 1; signalled when events are queued
	// lost is signalled (cap 1) when the last live server leaves the
	// stub's view, so that keepJoined tries to join again at once.
	lost chan struct{}
	// loadByLease is set while the servers take the load with lease
	// renewals: the load in the metadata then stays as it was at join.
	loadByLease *atomic.Bool
	// leaving is set once leave has begun: the stub joins nothing more.
	leaving atomic.Bool

	// mu guards meta, events and seen, and orders the metadata set on ml
	// (setMeta) as meta changes.
	mu     sync.Mutex
	meta   client.NodeMeta
	events []memberEvent
	seen   seenServers
}

// startGossip creates the memberlist node; run joins the pool.
func startGossip(cfg Config, httpAddr string, servers *serverList, peers *peerList, facts *factSource, loadByLease *atomic.Bool) (*gossip, error) {
	g := &gossip{
		log:         cfg.Logger,
		servers:     servers,
		peers:       peers,
		facts:       facts,
		loadByLease: loadByLease,
		wake:        make(chan struct{}, 1),
		lost:        make(chan struct{}, 1),
		seen:        newSeenServers(),
		meta:        client.NodeMeta{Role: client.RoleStub, HTTP: httpAddr},
	}
	if l, err := facts.load(); err == nil {
		g.meta.Load = l
	}
	raw, err := json.Marshal(g.meta)
	if err != nil {
		return nil, fmt.Errorf("encode gossip metadata: %w", err)
	}
	g.ml, err = gossipnode.New(gossipnode.Config{
		Name:    cfg.Name,
		Addr:    cfg.GossipAddr,
		Keyring: cfg.GossipKeyring,
		Meta:    raw,
		Events:  (*eventDelegate)(g),
		Logger:  cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	g.addr = g.ml.Addr()

	// Advertise a reachable API address: an unspecified host becomes the
	// gossip advertise address.
	if h, p, err := net.SplitHostPort(httpAddr); err == nil {
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
			host, _, _ := net.SplitHostPort(g.addr)
			err := g.updateMeta(func(m *client.NodeMeta) bool {
				m.HTTP = net.JoinHostPort(host, p)
				return true
			})
			if err != nil {
				g.log.Warn("gossip metadata update", "err", err)
			}
		}
	}
	return g, nil
}

// updateMeta applies change to the stub's metadata and, when change
// reports that it changed it, gossips the new metadata, waiting up to
// updateTimeout for the broadcast to go out.
func (g *gossip) updateMeta(change func(*client.NodeMeta) bool) error {
	g.mu.Lock()
	changed := change(&g.meta)
	if changed {
		g.setMeta()
	}
	g.mu.Unlock()
	if !changed {
		return nil
	}
	return g.ml.PublishMeta(updateTimeout)
}

// setMeta hands the node the metadata as it is now. g.mu is held, so
// the node is handed each change in the order they were made.
func (g *gossip) setMeta() {
	raw, err := json.Marshal(g.meta)
	if err != nil {
		g.log.Error("encode gossip metadata", "err", err)
		return
	}
	g.ml.SetMeta(raw)
}

// httpAddr returns the API address the stub gossips.
func (g *gossip) httpAddr() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.meta.HTTP
}

// GossipAddr returns the host:port the stub's gossip node advertises, or
// "" when gossip is off.
func (s *Stub) GossipAddr() string {
	if s.gossip == nil {
		return ""
	}
	return s.gossip.addr
}

// GossipMembers returns the names of the members of the gossip pool this
// stub holds alive or suspect (itself included), in no particular order.
// It is empty when gossip is off. Safe for concurrent use.
func (s *Stub) GossipMembers() []string {
	if s.gossip == nil {
		return nil
	}
	return s.gossip.ml.Members()
}

// run joins the pool, and joins it again whenever no server is left in
// the stub's view of it (keepJoined, rejoin.go), applies membership events
// and refreshes the load average, until ctx ends.
func (g *gossip) run(ctx context.Context, join []string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { g.keepJoined(ctx, join) })
	tick := time.NewTicker(loadInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
			g.applyEvents()
		case <-tick.C:
			g.refreshLoad()
		}
	}
}

// applyEvents feeds the queued membership events to the server list and
// to the stub's memory of the servers it has seen.
func (g *gossip) applyEvents() {
	g.mu.Lock()
	evs := g.events
	g.events = nil
	g.mu.Unlock()
	for _, ev := range evs {
		var meta client.NodeMeta
		if !ev.left && len(ev.meta) > 0 {
			if err := json.Unmarshal(ev.meta, &meta); err != nil {
				g.log.Warn("bad gossip metadata", "node", ev.name, "err", err)
			}
		}
		server := meta.Role == client.RoleServer && meta.HTTP != ""
		if server {
			g.log.Debug("server seen in gossip", "node", ev.name, "http", meta.HTTP)
			g.servers.setGossip(ev.name, meta.HTTP, meta.Leader)
		} else {
			g.servers.setGossip(ev.name, "", false)
		}
		if meta.Role == client.RoleStub {
			g.peers.set(ev.name, meta.HTTP)
		} else {
			g.peers.set(ev.name, "")
		}
		g.mu.Lock()
		change := g.seen.update(ev.name, ev.addr, server, ev.left)
		live := g.seen.live()
		g.mu.Unlock()
		switch change {
		case lastServerGone:
			g.log.Warn("no server left in the gossip pool; joining again until one answers",
				"last", ev.name, "every", fmt.Sprintf("%v-%v", rejoinMin, rejoinMax))
			select {
			case g.lost <- struct{}{}:
			default:
			}
		case serverBack:
			g.log.Info("server back in the gossip pool", "node", ev.name, "servers", live)
		}
	}
}

// refreshLoad gossips the load average when it moved by loadDelta or more,
// unless the servers take it with lease renewals: a metadata change is
// broadcast to every member of the pool, so at thousands of machines
// gossiping load would be most of the pool's traffic, while a renewal goes
// to the leader alone.
func (g *gossip) refreshLoad() {
	if g.loadByLease != nil && g.loadByLease.Load() {
		return
	}
	l, err := g.facts.load()
	if err != nil {
		g.log.Warn("read load average", "err", err)
		return
	}
	err = g.updateMeta(func(m *client.NodeMeta) bool {
		if math.Abs(l-m.Load) < loadDelta {
			return false
		}
		m.Load = l
		return true
	})
	if err != nil {
		g.log.Debug("gossip load update", "err", err)
	}
}

// execUsedStep is the least change of the exec dir's used space that is
// gossiped: a metadata change goes to every member of the pool.
const execUsedStep = 1 << 20

// setExecUsed gossips used, the bytes the exec dir's files take, when it
// moved by a tenth or more of the value gossiped, and at least
// execUsedStep: an exec dir under 1 MiB is never gossiped, so a stub
// whose jobs write little changes no metadata (each change is a
// broadcast, and a burst of them as stubs start slows the pool's
// convergence).
func (g *gossip) setExecUsed(used int64) {
	err := g.updateMeta(func(m *client.NodeMeta) bool {
		was := m.ExecUsed
		if max(used-was, was-used) < max(execUsedStep, was/10) {
			return false
		}
		m.ExecUsed = used
		return true
	})
	if err != nil {
		g.log.Debug("gossip exec dir use update", "err", err)
	}
}

// leave leaves the pool and stops the memberlist node.
func (g *gossip) leave() error {
	g.leaving.Store(true)
	// Say so first: the servers then log a departure, not a failure.
	err := g.updateMeta(func(m *client.NodeMeta) bool {
		m.Leaving = true
		return true
	})
	if err != nil {
		g.log.Debug("gossip leaving update", "err", err)
	}
	if err := g.ml.Leave(leaveTimeout); err != nil {
		g.log.Warn("gossip leave", "err", err)
	}
	return g.ml.Shutdown()
}

// push queues a membership event without blocking.
func (g *gossip) push(ev memberEvent) {
	g.mu.Lock()
	g.events = append(g.events, ev)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// eventDelegate is the memberlist.EventDelegate: it copies each event and
// hands it to run.
type eventDelegate gossip

var _ memberlist.EventDelegate = (*eventDelegate)(nil)

// NotifyJoin queues a join.
func (d *eventDelegate) NotifyJoin(n *memberlist.Node) {
	(*gossip)(d).push(memberEvent{name: n.Name, addr: n.Address(), meta: bytes.Clone(n.Meta)})
}

// NotifyLeave queues a leave or failure.
func (d *eventDelegate) NotifyLeave(n *memberlist.Node) {
	(*gossip)(d).push(memberEvent{name: n.Name, addr: n.Address(), left: true})
}

// NotifyUpdate queues a metadata change.
func (d *eventDelegate) NotifyUpdate(n *memberlist.Node) {
	(*gossip)(d).push(memberEvent{name: n.Name, addr: n.Address(), meta: bytes.Clone(n.Meta)})
}
