package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	gossipnode "github.com/netmgr/netmgr/internal/gossip"
)

// member is what this server knows of one node of the gossip pool.
type member struct {
	Name  string
	Meta  client.NodeMeta
	Alive bool // false once memberlist reported it dead or gone
	// Left is true when it went after saying so in its metadata (a stub's
	// clean shutdown), not by failing.
	Left bool
	// Suspect is true while the leader has had no lease renewal from the
	// stub for lease.Table.SuspectAfter (Server.pool sets it). No new work goes there.
	Suspect bool
	Since   time.Time
}

// gossip is this server's part of the gossip pool: its metadata
// (client.NodeMeta), and its view of the pool built from the node's
// membership events. The node itself is internal/gossip's.
type gossip struct {
	// ml is the memberlist node, shared with the stubs' code.
	ml     *gossipnode.Node
	events chan struct{} // a coalesced "the pool changed" signal for the leader
	log    *slog.Logger

	metaMu sync.Mutex // guards meta
	meta   client.NodeMeta
	// wantLeader is whether this server leads, as setLeader last heard;
	// publishMu makes one publishLeader at a time gossip it.
	wantLeader atomic.Bool
	publishMu  sync.Mutex

	mu      sync.Mutex // guards members, serverIdx and changed
	members map[string]*member
	// serverIdx holds the members whose metadata last said server, by
	// name: what forwarding, the group's level and the dispatcher ask
	// for, on every forwarded request, without a copy of the whole pool;
	// nil until the first server's update.
	serverIdx map[string]*member
	// changed are the members updated since the leader's liveness last
	// took them (takeChanged); nil until the first update.
	changed map[string]struct{}
	// version counts the updates (poolVersion).
	version uint64
	// liveServers is the live servers' metadata by name (servers),
	// rebuilt under mu when a server's entry changes and read without
	// it. Every forwarded request asks; with mu taken each time, a
	// server stalled at 2,600 machines joining had 159 requests queued
	// on mu, and memberlist's callbacks (update), which take mu while
	// memberlist holds its member lock, with them: its probes and acks
	// waited too.
	liveServers atomic.Pointer[map[string]client.NodeMeta]
}

func newGossip(cfg *Config, meta client.NodeMeta) (*gossip, error) {
	g := &gossip{
		events:  make(chan struct{}, 1),
		log:     cfg.Logger,
		members: make(map[string]*member),
		meta:    meta,
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode gossip meta: %w", err)
	}
	g.ml, err = gossipnode.New(gossipnode.Config{
		Name:    cfg.Name,
		Addr:    cfg.GossipAddr,
		Keyring: cfg.GossipKeyring,
		Meta:    raw,
		Events:  g,
		Logger:  cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// addr returns the gossip address the node advertises.
func (g *gossip) addr() string { return g.ml.Addr() }

// GossipMembers returns the names of the members of the gossip pool this
// server holds alive or suspect (itself included), in no particular
// order. Safe for concurrent use.
func (s *Server) GossipMembers() []string {
	return s.gossip.ml.Members()
}

// join joins the given gossip addresses, retrying every second until one
// answers or stop is closed.
func (g *gossip) join(addrs []string, stop <-chan struct{}) {
	if len(addrs) == 0 {
		return
	}
	for {
		n, err := g.ml.Join(addrs)
		if n > 0 {
			return
		}
		if means, ok := pki.GossipKeyProblem(fmt.Sprint(err)); ok {
			g.log.Warn("gossip join refused, retrying: "+means, "addrs", addrs, "hint", pki.GossipKeyHint, "err", err)
		} else {
			g.log.Warn("gossip join failed, retrying", "addrs", addrs, "err", err)
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// snapshot returns a copy of the pool as this server's gossip sees it.
// Server.pool adds the leader's suspicions.
func (g *gossip) snapshot() map[string]member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]member, len(g.members))
	for name, m := range g.members {
		out[name] = *m
	}
	return out
}

// member returns one member of the pool as this server's gossip sees it.
func (g *gossip) member(name string) (member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[name]
	if !ok {
		return member{}, false
	}
	return *m, true
}

// poolVersion returns a number that grows with every update of the pool.
func (g *gossip) poolVersion() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.version
}

// takeChanged returns the members updated since the last call and
// forgets them. At most one caller (the leader's liveness) takes them.
func (g *gossip) takeChanged() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := slices.Collect(maps.Keys(g.changed))
	clear(g.changed)
	return names
}

// servers returns the live servers, by name; the map is shared and must
// not be changed.
func (g *gossip) servers() map[string]client.NodeMeta {
	if p := g.liveServers.Load(); p != nil {
		return *p
	}
	return nil
}

// publishServersLocked rebuilds what servers returns from serverIdx;
// g.mu is held.
func (g *gossip) publishServersLocked() {
	out := make(map[string]client.NodeMeta, len(g.serverIdx))
	for name, m := range g.serverIdx {
		if m.Alive {
			out[name] = m.Meta
		}
	}
	g.liveServers.Store(&out)
}

// serverMembers returns the members whose metadata says server, alive or
// not, as this server's gossip sees them.
func (g *gossip) serverMembers() map[string]member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]member, len(g.serverIdx))
	for name, m := range g.serverIdx {
		out[name] = *m
	}
	return out
}

func (g *gossip) update(n *memberlist.Node, alive bool) {
	var meta client.NodeMeta
	if err := json.Unmarshal(n.Meta, &meta); err != nil {
		g.log.Warn("ignoring gossip member with unreadable meta", "member", n.Name, "err", err)
		return
	}
	g.mu.Lock()
	m := &member{Name: n.Name, Meta: meta, Alive: alive, Left: !alive && meta.Leaving, Since: time.Now()}
	g.members[n.Name] = m
	if meta.Role == client.RoleServer {
		if g.serverIdx == nil {
			g.serverIdx = make(map[string]*member)
		}
		g.serverIdx[n.Name] = m
		g.publishServersLocked()
	} else if _, was := g.serverIdx[n.Name]; was {
		delete(g.serverIdx, n.Name)
		g.publishServersLocked()
	}
	if g.changed == nil {
		g.changed = make(map[string]struct{})
	}
	g.changed[n.Name] = struct{}{}
	g.version++
	g.mu.Unlock()
	select {
	case g.events <- struct{}{}:
	default:
	}
}

// NotifyJoin is memberlist's callback; it copies and hands off.
func (g *gossip) NotifyJoin(n *memberlist.Node) { g.update(n, true) }

// NotifyLeave is memberlist's callback for a dead or departed node.
func (g *gossip) NotifyLeave(n *memberlist.Node) { g.update(n, false) }

// NotifyUpdate is memberlist's callback for changed metadata.
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.update(n, true) }

// setLeader gossips whether this server leads (client.NodeMeta.Leader),
// so that stubs joining the pool renew with the leader from their first
// renewal, in the background: memberlist's UpdateNode waits for the
// broadcast. Best effort: the stubs learn the leader from answers anyway.
func (g *gossip) setLeader(leader bool) {
	g.wantLeader.Store(leader)
	go g.publishLeader()
}

// publishLeader gossips the leadership setLeader last heard of, if it
// changed; calls made one after another publish the last state.
func (g *gossip) publishLeader() {
	g.publishMu.Lock()
	defer g.publishMu.Unlock()
	leader := g.wantLeader.Load()
	g.metaMu.Lock()
	changed := g.meta.Leader != leader
	if changed {
		g.meta.Leader = leader
		raw, err := json.Marshal(g.meta)
		if err != nil {
			changed = false
			g.log.Warn("encode gossip meta", "err", err)
		} else {
			g.ml.SetMeta(raw)
		}
	}
	g.metaMu.Unlock()
	if !changed {
		return
	}
	if err := g.ml.PublishMeta(5 * time.Second); err != nil {
		g.log.Debug("gossip leadership update", "leader", leader, "err", err)
	}
}

// shutdown leaves the pool, waiting up to a second for the news to go
// out, and stops the node.
func (g *gossip) shutdown() {
	_ = g.ml.Leave(time.Second)
	_ = g.ml.Shutdown()
}
