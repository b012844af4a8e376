package gossip

import (
	"fmt"
	"log"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client/pki"
)

// Config is what a Node is started with.
type Config struct {
	// Name is the node's name in the pool; no two members share one.
	Name string
	// Addr is the gossip bind address, host:port, for TCP and UDP; port
	// 0 picks one. A host name is resolved. An unspecified host binds
	// every address and advertises a private one (memberlist's choice);
	// an address binds and advertises that address.
	Addr string
	// Keyring is the gossip keyring file (pki.ReadKeyring): its first
	// key encrypts, every key decrypts, and gossip not encrypted with one
	// of them is refused. "" gossips in the clear.
	Keyring string
	// Meta is the metadata the node starts with; SetMeta changes it. It
	// must fit memberlist.MetaMaxSize (512 bytes).
	Meta []byte
	// Events, when not nil, hears of members joining, leaving or failing,
	// and changing their metadata, from memberlist's goroutines: it must
	// copy what it needs and return without blocking.
	Events memberlist.EventDelegate
	// Logger takes memberlist's lines (internal/slogadapt) and the node's
	// own; nil discards them.
	Logger *slog.Logger
}

// Node is one member of the gossip pool. Its methods are safe for
// concurrent use.
type Node struct {
	ml  *memberlist.Memberlist
	log *slog.Logger
	// addr is the advertised address, host:port, read once at start:
	// memberlist's LocalNode is not safe to read while the node updates
	// its metadata.
	addr string
	// keyring holds the encryption keys, kept equal to Config.Keyring's
	// file by ReloadKeyring; nil without one.
	keyring *pki.LiveKeyring
	// refusals logs gossip refused for want of the right key.
	refusals *refusals
	// meta serves the node's metadata to memberlist.
	meta *delegate
}

// New starts a node on cfg.Addr. It does not join a pool: Join does.
func New(cfg Config) (*Node, error) { return newNode(cfg, time.Now) }

// newNode is New with the clock the refusal log reads, for tests.
func newNode(cfg Config, now func() time.Time) (*Node, error) {
	l := cfg.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	bind, err := net.ResolveTCPAddr("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("gossip address %q: %w", cfg.Addr, err)
	}
	n := &Node{log: l, refusals: newRefusals(l, now), meta: &delegate{log: l, raw: cfg.Meta}}

	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Name
	// memberlist's LZW allocates and clears a 64 KB table for every packet
	// it sends, which was a third of the CPU of 100 simulated stubs, to
	// shrink packets of a few hundred bytes on a LAN. Members still read
	// compressed packets from those that send them.
	mc.EnableCompression = false
	mc.BindAddr = "0.0.0.0"
	if bind.IP != nil && !bind.IP.IsUnspecified() {
		mc.BindAddr = bind.IP.String()
		mc.AdvertiseAddr = bind.IP.String()
	}
	mc.BindPort, mc.AdvertisePort = bind.Port, bind.Port
	mc.Delegate = n.meta
	mc.Events = cfg.Events
	mc.Logger = log.New(n.refusals.writer(), "", 0)
	if cfg.Keyring != "" {
		if n.keyring, err = pki.UseKeyring(mc, cfg.Keyring); err != nil {
			return nil, fmt.Errorf("start gossip: %w", err)
		}
	}
	if n.ml, err = memberlist.Create(mc); err != nil {
		return nil, fmt.Errorf("start gossip on %s: %w", cfg.Addr, err)
	}
	n.addr = n.ml.LocalNode().Address()
	return n, nil
}

// Addr returns the address the node advertises, host:port.
func (n *Node) Addr() string { return n.addr }

// Members returns the names of the members the node holds alive or
// suspect, itself included, in no particular order.
func (n *Node) Members() []string {
	var out []string
	for _, m := range n.ml.Members() {
		out = append(out, m.Name)
	}
	return out
}

// NumMembers returns how many members the node holds alive or suspect,
// itself included.
func (n *Node) NumMembers() int { return n.ml.NumMembers() }

// HealthScore returns memberlist's awareness score: 0 is healthy, higher
// means the node has been slow to answer probes (it is overloaded or
// its network is).
func (n *Node) HealthScore() int { return n.ml.GetHealthScore() }

// Join contacts the addresses (host:port), one after the other, and
// joins the pool of each that answers; it returns how many did. The
// error is nil once one did. It blocks for up to memberlist's TCP
// timeout per address that does not answer.
func (n *Node) Join(addrs []string) (int, error) {
	k, err := n.ml.Join(addrs)
	if err != nil {
		return k, fmt.Errorf("join gossip pool: %w", err)
	}
	return k, nil
}

// Leave tells the pool the node is leaving (not failing) and waits up
// to timeout for the news to go out. The node stays up: Shutdown stops
// it.
func (n *Node) Leave(timeout time.Duration) error {
	if err := n.ml.Leave(timeout); err != nil {
		return fmt.Errorf("leave gossip pool: %w", err)
	}
	return nil
}

// Shutdown stops the node without a word to the pool (which will find
// it failed unless Leave said otherwise first).
func (n *Node) Shutdown() error {
	if err := n.ml.Shutdown(); err != nil {
		return fmt.Errorf("stop gossip: %w", err)
	}
	return nil
}
