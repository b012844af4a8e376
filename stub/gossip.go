package stub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/slogadapt"
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
	// gossipCompression is off: memberlist's LZW allocates and clears a
	// 64 KB table for every packet it sends, which was a third of the CPU
	// of 100 simulated stubs, to shrink packets of a few hundred bytes on
	// a LAN. Members still read compressed packets from those that send
	// them.
	gossipCompression = false
)

// memberEvent is a copy of what a memberlist callback reported.
type memberEvent struct {
	name string
	addr string // the member's gossip address, host:port
	meta []byte
	left bool
}

// gossip is the stub's membership in the memberlist pool: it gossips the
// stub's metadata and feeds the servers it sees to the server list.
type gossip struct {
	log *slog.Logger
	ml  *memberlist.Memberlist
	// addr is the gossip address the node advertises, host:port, read once
	// at start: memberlist's LocalNode is not safe to read while the node
	// updates its metadata.
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

	// keyring holds the gossip encryption keys, kept equal to the file
	// of Config.GossipKeyring; nil without one.
	keyring *pki.LiveKeyring
	// refusals logs gossip refused for want of the right key.
	refusals *keyRefusals

	mu     sync.Mutex // guards meta, events and seen
	meta   client.NodeMeta
	events []memberEvent
	seen   seenServers
}

// startGossip creates the memberlist node; run joins the pool.
func startGossip(cfg Config, httpAddr string, servers *serverList, peers *peerList, facts *factSource, loadByLease *atomic.Bool) (*gossip, error) {
	bind, err := net.ResolveTCPAddr("tcp", cfg.GossipAddr)
	if err != nil {
		return nil, fmt.Errorf("gossip address %q: %w", cfg.GossipAddr, err)
	}
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
		refusals:    &keyRefusals{},
	}
	if l, err := facts.load(); err == nil {
		g.meta.Load = l
	}

	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Name
	mc.EnableCompression = gossipCompression
	mc.BindAddr = "0.0.0.0"
	if bind.IP != nil && !bind.IP.IsUnspecified() {
		mc.BindAddr = bind.IP.String()
		mc.AdvertiseAddr = bind.IP.String()
	}
	mc.BindPort, mc.AdvertisePort = bind.Port, bind.Port
	mc.Delegate = (*metaDelegate)(g)
	mc.Events = (*eventDelegate)(g)
	mc.Logger = log.New(slogadapt.Memberlist(cfg.Logger, func(line string) bool { return g.refusals.log(cfg.Logger, line) }), "", 0)
	if cfg.GossipKeyring != "" {
		if g.keyring, err = pki.UseKeyring(mc, cfg.GossipKeyring); err != nil {
			return nil, fmt.Errorf("start gossip: %w", err)
		}
	}
	if g.ml, err = memberlist.Create(mc); err != nil {
		return nil, fmt.Errorf("start gossip on %s: %w", cfg.GossipAddr, err)
	}
	g.addr = g.ml.LocalNode().Address()

	// Advertise a reachable API address: an unspecified host becomes the
	// gossip advertise address.
	if h, p, err := net.SplitHostPort(httpAddr); err == nil {
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
			g.mu.Lock()
			g.meta.HTTP = net.JoinHostPort(g.ml.LocalNode().Addr.String(), p)
			g.mu.Unlock()
			if err := g.ml.UpdateNode(updateTimeout); err != nil {
				g.log.Warn("gossip metadata update", "err", err)
			}
		}
	}
	return g, nil
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
	var out []string
	for _, n := range s.gossip.ml.Members() {
		out = append(out, n.Name)
	}
	return out
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
	g.mu.Lock()
	changed := math.Abs(l-g.meta.Load) >= loadDelta
	if changed {
		g.meta.Load = l
	}
	g.mu.Unlock()
	if changed {
		if err := g.ml.UpdateNode(updateTimeout); err != nil {
			g.log.Debug("gossip load update", "err", err)
		}
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
	g.mu.Lock()
	was := g.meta.ExecUsed
	diff := max(used-was, was-used)
	changed := diff >= max(execUsedStep, was/10)
	if changed {
		g.meta.ExecUsed = used
	}
	g.mu.Unlock()
	if changed {
		if err := g.ml.UpdateNode(updateTimeout); err != nil {
			g.log.Debug("gossip exec dir use update", "err", err)
		}
	}
}

// leave leaves the pool and stops the memberlist node.
func (g *gossip) leave() error {
	g.leaving.Store(true)
	// Say so first: the servers then log a departure, not a failure.
	g.mu.Lock()
	g.meta.Leaving = true
	g.mu.Unlock()
	if err := g.ml.UpdateNode(updateTimeout); err != nil {
		g.log.Debug("gossip leaving update", "err", err)
	}
	if err := g.ml.Leave(leaveTimeout); err != nil {
		g.log.Warn("gossip leave", "err", err)
	}
	if err := g.ml.Shutdown(); err != nil {
		return fmt.Errorf("stop gossip: %w", err)
	}
	return nil
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

// metaDelegate is the memberlist.Delegate: it serves the stub's metadata.
type metaDelegate gossip

var _ memberlist.Delegate = (*metaDelegate)(nil)

// NodeMeta returns the stub's client.NodeMeta as JSON.
func (d *metaDelegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	b, err := json.Marshal(d.meta)
	d.mu.Unlock()
	if err != nil || len(b) > limit {
		d.log.Error("gossip metadata does not fit", "len", len(b), "limit", limit, "err", err)
		return nil
	}
	return b
}

// NotifyMsg ignores user messages; the stub sends none.
func (d *metaDelegate) NotifyMsg([]byte) {}

// GetBroadcasts returns nothing; the stub broadcasts nothing.
func (d *metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState returns nothing; there is no state to push or pull.
func (d *metaDelegate) LocalState(bool) []byte { return nil }

// MergeRemoteState ignores remote state.
func (d *metaDelegate) MergeRemoteState([]byte, bool) {}

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
