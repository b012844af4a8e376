package server

import (
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
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
	// stub for suspectAfter (Server.pool sets it). No new work goes there.
	Suspect bool
	Since   time.Time
}

// gossip runs this server's memberlist node and keeps a view of the pool.
type gossip struct {
	ml     *memberlist.Memberlist
	events chan struct{} // a coalesced "the pool changed" signal for the leader
	log    *slog.Logger
	bound  string // the gossip address actually bound (addr)

	metaMu sync.Mutex // guards meta and metaRaw
	meta   client.NodeMeta
	// metaRaw is meta as JSON, as memberlist gossips it.
	metaRaw []byte
	// wantLeader is whether this server leads, as setLeader last heard;
	// publishMu makes one publishLeader at a time gossip it.
	wantLeader atomic.Bool
	publishMu  sync.Mutex

	mu      sync.Mutex // guards members
	members map[string]*member

	// keyring holds the gossip encryption keys, kept equal to the file
	// of Config.GossipKeyring; nil without one.
	keyring *pki.LiveKeyring
}

func newGossip(cfg *Config, meta client.NodeMeta) (*gossip, error) {
	g := &gossip{
		events:  make(chan struct{}, 1),
		log:     cfg.Logger,
		members: make(map[string]*member),
	}
	g.meta = meta
	var err error
	if g.metaRaw, err = json.Marshal(meta); err != nil {
		return nil, fmt.Errorf("encode gossip meta: %w", err)
	}
	host, portStr, err := net.SplitHostPort(cfg.GossipAddr)
	if err != nil {
		return nil, fmt.Errorf("gossip address: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("gossip port: %w", err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Name
	mc.EnableCompression = false // as the stubs' (stub/gossip.go)
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = host, port
	mc.Delegate = g
	mc.Events = g
	mc.Logger = log.New(newMemberlistLog(cfg.Logger), "", 0)
	if cfg.GossipKeyring != "" {
		if g.keyring, err = pki.UseKeyring(mc, cfg.GossipKeyring); err != nil {
			return nil, fmt.Errorf("start gossip: %w", err)
		}
	}
	if g.ml, err = memberlist.Create(mc); err != nil {
		return nil, fmt.Errorf("start gossip: %w", err)
	}
	// Read once, before anything can update the node: memberlist's
	// LocalNode hands out the node it rewrites in UpdateNode (setLeader).
	n := g.ml.LocalNode()
	g.bound = net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	return g, nil
}

// addr returns the gossip address actually bound.
func (g *gossip) addr() string { return g.bound }

// GossipMembers returns the names of the members of the gossip pool this
// server holds alive or suspect (itself included), in no particular
// order. Safe for concurrent use.
func (s *Server) GossipMembers() []string {
	var out []string
	for _, n := range s.gossip.ml.Members() {
		out = append(out, n.Name)
	}
	return out
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

// servers returns the live servers, by name.
func (g *gossip) servers() map[string]client.NodeMeta {
	out := make(map[string]client.NodeMeta)
	for name, m := range g.snapshot() {
		if m.Alive && m.Meta.Role == client.RoleServer {
			out[name] = m.Meta
		}
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
	g.members[n.Name] = &member{Name: n.Name, Meta: meta, Alive: alive, Left: !alive && meta.Leaving, Since: time.Now()}
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

// NodeMeta returns this server's metadata.
func (g *gossip) NodeMeta(limit int) []byte {
	g.metaMu.Lock()
	defer g.metaMu.Unlock()
	return g.metaRaw
}

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
			g.metaRaw = raw
		}
	}
	g.metaMu.Unlock()
	if !changed {
		return
	}
	if err := g.ml.UpdateNode(5 * time.Second); err != nil {
		g.log.Debug("gossip leadership update", "leader", leader, "err", err)
	}
}

// NotifyMsg ignores user messages; netmgr sends none.
func (g *gossip) NotifyMsg([]byte) {}

// GetBroadcasts has nothing to broadcast.
func (g *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState has no state to push.
func (g *gossip) LocalState(join bool) []byte { return nil }

// MergeRemoteState ignores pushed state.
func (g *gossip) MergeRemoteState(buf []byte, join bool) {}

func (g *gossip) shutdown() {
	_ = g.ml.Leave(time.Second)
	_ = g.ml.Shutdown()
}
