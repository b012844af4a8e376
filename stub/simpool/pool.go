package simpool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// Config is what a Pool is started with.
type Config struct {
	// Names are the simulated machines' names, one each.
	Names []string
	// HTTPAddrs and GossipAddrs are each machine's API and gossip
	// addresses (host:port, port 0 picks one), as many as Names.
	HTTPAddrs, GossipAddrs []string
	// Join are the gossip addresses of the servers (or any member) each
	// machine joins.
	Join []string
	// TLS returns machine name's certificate material; nil runs the pool
	// without TLS, for an insecure group.
	TLS func(name string) (*pki.Material, error)
	// Keys is the gossip keyring (pki.ReadKeyring): the first key
	// encrypts, every key decrypts; nil gossips in the clear.
	Keys [][]byte
	// Facts are the facts every machine reports (its Name, HTTPAddr and
	// GossipAddr are its own): the host's, with the simulated claims.
	Facts client.Facts
	// RunTime is how long every simulated job runs before it exits 0.
	RunTime time.Duration
	// Shared makes the machines share one API listener, one gossip
	// listener and one gossip UDP socket, bound to every address (0.0.0.0)
	// on the ports of the first machine's addresses, each machine's
	// traffic told apart by the address it was sent to: each machine's
	// addresses must then have a host (IPv4) of its own and the same
	// ports. A pool of 10,000 machines needs it to fit a limit of 20,000
	// open files; connections and packets to an address no machine holds
	// are dropped.
	Shared bool
	// ColdServers makes each machine keep a connection and a lease
	// stream with the leader only, closing a connection to another
	// server after 5 s idle, instead of a stream waiting with each server
	// (client.WithWarmConnections): a machine then holds one or two open
	// files for the servers instead of three or four, and a change of
	// leader costs it a TLS handshake with the new one.
	ColdServers bool
	// JoinParallel bounds the joins in flight at once; 0 means 16.
	JoinParallel int
	// JoinRate, when positive, is how many machines begin to join (and
	// to renew) a second at most: a real pool's machines do not all boot
	// in the same minute, and 10,000 joining as fast as the servers
	// answer overload a small host's servers (each join pushes the whole
	// member list, and the first renewal costs a TLS handshake).
	JoinRate float64
	// OutagePeers are, for a pool split over several `netmgr sim`
	// processes, machines of each other process (names and API
	// addresses; more than one, so that a killed machine does not cut
	// its process off): each witness round adds their processes' tallies
	// (POST /v1/outage/witness, asked of a process's machines at once,
	// the first answer taken) to this one's, as a real pool's witness
	// adds its ranges', so that the split pool covers as one.
	OutagePeers [][]OutagePeer
	// Logger takes the pool's lines; nil discards them.
	Logger *slog.Logger
}

// OutagePeer is one machine of another process of the same pool, whose
// witness answer is its process's tally (Config.OutagePeers).
type OutagePeer struct {
	Name, Addr string
}

// Pool runs simulated machines. Its methods are safe for concurrent use.
type Pool struct {
	cfg  Config
	log  *slog.Logger
	keys keyring
	srv  *http.Server
	// shared are the sockets the machines share (Config.Shared), or nil.
	shared *shared
	ms     []*Machine
	byN    map[string]*Machine
	pid    atomic.Int64 // the last simulated pid handed out
	// peers holds clients for the outage peers, by process
	// (SetOutagePeers).
	peers atomic.Pointer[[][]*client.StubClient]
	// stoppedByLease counts the restartable attempts machines stopped
	// because their leases ran out uncovered (Stats).
	stoppedByLease atomic.Int64
	// peerMisses counts the witness rounds in which another process of
	// the pool did not answer in time, and bareRounds those that found
	// no majority cut off while a machine was near an outage, or came
	// too late (Stats).
	peerMisses, bareRounds atomic.Int64
	// handshakes bounds the machines' TLS handshakes with the servers in
	// progress at once (handshakesAtOnce).
	handshakes chan struct{}
	// streamHandshakes bounds the lease streams' handshakes at once
	// (streamHandshakesAtOnce), apart, so that streams being opened never
	// keep a renewal's plain request from its connection.
	streamHandshakes chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	bins sync.Map // binary path -> error (nil: it would exec)

	mu sync.Mutex // guards the fields below
	// servers are the servers learned from gossip: name -> its metadata.
	servers map[string]client.NodeMeta
	// known is the sorted list of their HTTP addresses the machines'
	// clients were last given, and leader the one they were told leads.
	known  []string
	leader string
	// udp are the join addresses' UDP addresses, resolved once.
	udp []*net.UDPAddr
	// relayed is the news relayed to the servers (gossip.go), pruned
	// when it is older than relayKeep, last at pruned.
	relayed map[relayKey]time.Time
	pruned  time.Time
}

// pidBase is above the kernel's largest pid (PID_MAX_LIMIT, 2^22): a
// simulated pid names no process.
const pidBase = 1 << 22

// Start starts every machine of cfg and has them join the pool, at most
// JoinParallel at once; it returns once each has joined or failed to
// (a machine that failed goes on trying in the background). Close
// stops them.
func Start(ctx context.Context, cfg Config) (*Pool, error) {
	if len(cfg.HTTPAddrs) != len(cfg.Names) || len(cfg.GossipAddrs) != len(cfg.Names) {
		return nil, fmt.Errorf("simulated pool: %d names, %d API and %d gossip addresses", len(cfg.Names), len(cfg.HTTPAddrs), len(cfg.GossipAddrs))
	}
	if len(cfg.Join) == 0 {
		return nil, errors.New("simulated pool: no address to join")
	}
	l := cfg.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	p := &Pool{cfg: cfg, log: l, keys: keyring(cfg.Keys), byN: make(map[string]*Machine), servers: make(map[string]client.NodeMeta),
		handshakes: make(chan struct{}, handshakesAtOnce), streamHandshakes: make(chan struct{}, streamHandshakesAtOnce)}
	p.pid.Store(pidBase)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = &http.Server{
		Handler:           p.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       idleConnTimeout,
		ConnContext:       connMachine,
		ErrorLog:          slog.NewLogLogger(l.Handler(), slog.LevelDebug),
	}
	if cfg.Shared && len(cfg.Names) > 0 {
		hp, gp, err := sharedPorts(cfg.HTTPAddrs, cfg.GossipAddrs)
		if err != nil {
			return nil, err
		}
		if p.shared, err = openShared(hp, gp); err != nil {
			return nil, fmt.Errorf("simulated pool: %w", err)
		}
	}
	for i, name := range cfg.Names {
		m, err := p.newMachine(name, cfg.HTTPAddrs[i], cfg.GossipAddrs[i])
		if err != nil {
			p.Close()
			return nil, err
		}
		p.ms = append(p.ms, m)
		p.byN[name] = m
	}
	for _, m := range p.ms {
		m.serve()
	}
	if p.shared != nil {
		p.serveShared()
	}
	if err := p.SetOutagePeers(cfg.OutagePeers); err != nil {
		p.Close()
		return nil, err
	}
	p.wg.Go(p.rideOutages)
	if err := p.join(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// join has every machine join the pool. The first join decodes the state
// the server sends back, to learn the servers' API addresses from their
// metadata; the others only read it.
func (p *Pool) join(ctx context.Context) error {
	first := p.ms[0]
	var err error
	for range 20 {
		if err = first.join(true); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("simulated machine %s: %w", first.name, err)
	}
	if len(p.serverAddrs()) == 0 {
		return fmt.Errorf("simulated pool: joined %v, but its pool has no server", p.cfg.Join)
	}
	par := p.cfg.JoinParallel
	if par <= 0 {
		par = 16
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var pace <-chan time.Time
	if p.cfg.JoinRate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / p.cfg.JoinRate))
		defer t.Stop()
		pace = t.C
	}
	for _, m := range p.ms {
		if pace != nil && m != first {
			select {
			case <-pace:
			case <-ctx.Done():
				wg.Wait()
				return ctx.Err()
			}
		}
		m.startLease()
		if m == first {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := m.join(false); err != nil {
				m.log.Warn("join gossip pool; trying again", "err", err)
				p.wg.Go(func() { m.keepJoining() })
			}
		})
	}
	wg.Wait()
	return nil
}

// Machines returns the pool's machines, in the order of Config.Names.
func (p *Pool) Machines() []*Machine { return slices.Clone(p.ms) }

// Machine returns the machine named name, or nil.
func (p *Pool) Machine(name string) *Machine { return p.byN[name] }

// Kill stops machine name as a power cut would: it stops answering
// gossip and its API, renews no lease and reports nothing more; its
// simulated jobs vanish with it.
func (p *Pool) Kill(name string) error {
	m := p.byN[name]
	if m == nil {
		return fmt.Errorf("kill: no simulated machine %q", name)
	}
	m.kill()
	return nil
}

// Stats are counts over the pool's life.
type Stats struct {
	// Machines is how many run; Killed how many were killed.
	Machines, Killed int
	// Refuted counts the suspicions and deaths of its machines the pool
	// refuted: each is a server (or member) that suspected a machine
	// alive and answering, a false suspicion unless the machine was mute.
	Refuted int64
	// StoppedByLease counts the restartable attempts the machines stopped
	// because their leases ran out with no cover from the pool.
	StoppedByLease int64
	// PeerMisses counts the witness rounds in which another process of
	// the pool (Config.OutagePeers) did not answer within its time, and
	// BareRounds the rounds near an outage that found no majority of the
	// pool cut off or were answered too late to cover: what to read when
	// machines stopped in an outage.
	PeerMisses, BareRounds int64
}

// Stats returns the pool's counts now.
func (p *Pool) Stats() Stats {
	var s Stats
	for _, m := range p.ms {
		if m.Dead() {
			s.Killed++
		} else {
			s.Machines++
		}
		s.Refuted += m.refuted.Load()
	}
	s.StoppedByLease = p.stoppedByLease.Load()
	s.PeerMisses, s.BareRounds = p.peerMisses.Load(), p.bareRounds.Load()
	return s
}

// Close has every live machine leave the pool (as a stub shutting down
// cleanly does) and stops them all.
func (p *Pool) Close() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, m := range p.ms {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			m.leave()
			m.kill()
		})
	}
	wg.Wait()
	p.cancel()
	_ = p.srv.Close()
	if p.shared != nil {
		p.shared.close()
	}
	p.wg.Wait()
}

// sharedPorts returns the one API and one gossip port of the addresses,
// which must all have them.
func sharedPorts(httpAddrs, gossipAddrs []string) (httpPort, gossipPort int, err error) {
	port := func(addrs []string) (int, error) {
		ports := make(map[string]bool)
		for _, a := range addrs {
			_, p, err := net.SplitHostPort(a)
			if err != nil {
				return 0, fmt.Errorf("simulated pool: %w", err)
			}
			ports[p] = true
		}
		if len(ports) != 1 {
			return 0, fmt.Errorf("simulated pool: shared sockets need one port for every machine, got %d", len(ports))
		}
		for p := range ports {
			return strconv.Atoi(p)
		}
		return 0, nil
	}
	if httpPort, err = port(httpAddrs); err != nil {
		return 0, 0, err
	}
	gossipPort, err = port(gossipAddrs)
	return httpPort, gossipPort, err
}

// learnServer records what gossip said of member name: a server's
// metadata (its API address, whether it leads), or that it is gone.
func (p *Pool) learnServer(name string, rawMeta []byte, gone bool) {
	var meta client.NodeMeta
	if !gone {
		if len(rawMeta) == 0 || json.Unmarshal(rawMeta, &meta) != nil || meta.Role != client.RoleServer || meta.HTTP == "" {
			return
		}
	}
	p.mu.Lock()
	old, had := p.servers[name]
	switch {
	case gone && !had:
		p.mu.Unlock()
		return
	case gone:
		delete(p.servers, name)
	case had && old.HTTP == meta.HTTP && old.Leader == meta.Leader:
		p.mu.Unlock()
		return
	default:
		p.servers[name] = meta
	}
	addrs, leader := p.serverListLocked()
	changed := !slices.Equal(addrs, p.known)
	hint := leader != "" && leader != p.leader
	p.known = addrs
	if leader != "" {
		p.leader = leader
	}
	p.mu.Unlock()
	if !changed && !hint {
		return
	}
	p.log.Info("servers learned from gossip", "servers", addrs, "leader", leader)
	for _, m := range p.ms {
		m.setServers(addrs, changed, leader)
	}
}

// serverListLocked returns the servers' API addresses, sorted, and the
// one leader's when exactly one claims to lead.
func (p *Pool) serverListLocked() (addrs []string, leader string) {
	n := 0
	for _, s := range p.servers {
		addrs = append(addrs, s.HTTP)
		if s.Leader {
			leader = s.HTTP
			n++
		}
	}
	slices.Sort(addrs)
	if n != 1 {
		leader = ""
	}
	return slices.Compact(addrs), leader
}

// serverAddrs returns the known servers' API addresses and the leader.
func (p *Pool) serverAddrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.known)
}

// nextPID returns a simulated pid no other simulated job had.
func (p *Pool) nextPID() int { return int(p.pid.Add(1)) }

// execError returns the error exec would give for binary, as the
// simulated supervisor checks it (cached per binary: the pool's machines
// share a file system).
func (p *Pool) execError(binary string) error {
	if v, ok := p.bins.Load(binary); ok {
		err, _ := v.(error)
		return err
	}
	var err error
	if !strings.Contains(binary, "/") {
		_, err = exec.LookPath(binary)
	} else if fi, serr := os.Stat(binary); serr != nil {
		err = fmt.Errorf("exec %s: %w", binary, serr)
	} else if !fi.Mode().IsRegular() {
		err = fmt.Errorf("exec %s: %w", binary, unix.EACCES)
	} else if aerr := unix.Access(binary, unix.X_OK); aerr != nil {
		err = fmt.Errorf("exec %s: %w", binary, aerr)
	}
	p.bins.Store(binary, err)
	return err
}

// listen opens a TCP listener on addr.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}
