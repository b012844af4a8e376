package simpool

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// Client timing, as the real stub's (stub/servers.go).
const (
	reportRetryFor      = 2 * time.Second
	reportTryTimeout    = time.Second
	leaseHedgeAfter     = 150 * time.Millisecond
	leaseLeaderPatience = renewTimeout / 2
	leaseWarmEvery      = 4 * time.Minute
	leaseIdleConn       = 5 * time.Minute
	// idleConnTimeout closes an idle API connection of a server to a
	// machine, and with Config.ColdServers a machine's to a server.
	idleConnTimeout = 5 * time.Second
	// handshakesAtOnce is how many machines of a pool shake hands with
	// the servers at once. Real machines each have a CPU of their own;
	// thousands of simulated ones redialling a new leader at once on one
	// host's few cores each got so little of it that none finished its
	// handshake before the server's 10 s deadline, every one was dialled
	// again, and the pool never came back (10,000 machines, cold). In
	// turn, each finishes in a few milliseconds, and a renewal whose time
	// runs out while it waits its turn costs nobody anything.
	handshakesAtOnce = 4
	// streamHandshakesAtOnce is how many machines of a pool shake hands
	// for a lease stream at once, on slots of their own: with the 4 the
	// API connections share, a 3,000-machine pool joining at 50 a second
	// lost its leases while its streams' openings held the slots its
	// renewals' connections waited for.
	streamHandshakesAtOnce = 16
)

// Machine is one simulated machine: its own name, certificate, API
// listener, gossip socket and lease, sharing the pool's runtime.
type Machine struct {
	pool *Pool
	name string
	log  *slog.Logger
	tls  *pki.Material // nil without TLS
	// tlsConfig is its API's TLS configuration, from tls.
	tlsConfig *tls.Config
	// httpAddr and gossipAddr are the addresses it listens on.
	httpAddr, gossipAddr string
	gossipIP             net.IP
	gossipPort           uint16

	api    net.Listener // the API's TCP listener, before TLS
	udp    *net.UDPConn
	tcp    net.Listener // gossip streams
	rc, lc *client.Client
	meta   []byte // the gossiped client.NodeMeta
	dead   atomic.Bool
	// mute drops the machine's gossip, in and out, as a partition
	// would, while it is set (tests).
	mute atomic.Bool
	// dropped counts the gossip packets dropped while mute; refuted the
	// suspicions (and deaths) of this machine it refuted.
	dropped, refuted atomic.Int64
	ctx              context.Context
	cancel           context.CancelFunc
	started          atomic.Bool // the lease keeper runs
	lease            leaseState
	// renewals counts the lease renewals a server granted, failures
	// the ones that failed (Renewals).
	renewals, failures atomic.Int64

	mu sync.Mutex // guards the fields below
	// incarnation is the member's memberlist incarnation.
	incarnation uint32
	conns       map[net.Conn]bool // open API connections
	attempts    map[client.AttemptRef]*attempt
	outbox      []client.ChildEvent // events no server has answered, in order
	sending     bool                // a sender goroutine runs
	seq         uint32              // the last gossip sequence number used
	acks        map[uint32]func()   // indirect probes waiting for an ack
}

func (p *Pool) newMachine(name, httpAddr, gossipAddr string) (m *Machine, err error) {
	m = &Machine{pool: p, name: name, log: p.log.With("machine", name), conns: make(map[net.Conn]bool),
		attempts: make(map[client.AttemptRef]*attempt)}
	m.ctx, m.cancel = context.WithCancel(p.ctx)
	defer func() {
		if err != nil {
			m.kill()
		}
	}()
	if p.cfg.TLS != nil {
		if m.tls, err = p.cfg.TLS(name); err != nil {
			return nil, fmt.Errorf("simulated machine %s: %w", name, err)
		}
	}
	if m.tls != nil {
		m.tlsConfig = m.tls.ServerConfig(true)
	}
	ua, err := net.ResolveUDPAddr("udp", gossipAddr)
	if err != nil {
		return nil, fmt.Errorf("simulated machine %s: gossip address %q: %w", name, gossipAddr, err)
	}
	if ua.IP == nil || ua.IP.IsUnspecified() {
		return nil, fmt.Errorf("simulated machine %s: gossip address %q must name the host to advertise", name, gossipAddr)
	}
	if s := p.shared; s != nil {
		ip4 := ua.IP.To4()
		if ip4 == nil {
			return nil, fmt.Errorf("simulated machine %s: gossip address %q: shared sockets need IPv4", name, gossipAddr)
		}
		if s.byIP[[4]byte(ip4)] != nil {
			return nil, fmt.Errorf("simulated machine %s: address %s taken by another machine", name, ip4)
		}
		hp, gp := s.ports()
		m.httpAddr = net.JoinHostPort(ip4.String(), strconv.Itoa(hp))
		m.gossipAddr = net.JoinHostPort(ip4.String(), strconv.Itoa(gp))
		m.gossipIP, m.gossipPort = ip4, uint16(gp)
		s.byIP[[4]byte(ip4)] = m
		return m, m.finishSetup()
	}
	if m.api, err = listen(httpAddr); err != nil {
		return nil, fmt.Errorf("simulated machine %s: %w", name, err)
	}
	m.httpAddr = m.api.Addr().String()
	// TCP first, then UDP on its port, as memberlist's transport does;
	// a port picked for TCP may be taken for UDP, and is picked again.
	for try := 0; ; try++ {
		if m.tcp, err = listen(gossipAddr); err != nil {
			return nil, fmt.Errorf("simulated machine %s: gossip: %w", name, err)
		}
		ta := m.tcp.Addr().(*net.TCPAddr)
		if m.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: ta.IP, Port: ta.Port}); err == nil {
			break
		}
		_ = m.tcp.Close()
		if ua.Port != 0 || try == 9 {
			m.tcp = nil
			return nil, fmt.Errorf("simulated machine %s: gossip: %w", name, err)
		}
	}
	ta := m.tcp.Addr().(*net.TCPAddr)
	m.gossipAddr = ta.String()
	m.gossipIP, m.gossipPort = ta.IP, uint16(ta.Port)
	if ip4 := m.gossipIP.To4(); ip4 != nil {
		m.gossipIP = ip4
	}
	return m, m.finishSetup()
}

// finishSetup makes the machine's metadata and clients once its
// addresses are known.
func (m *Machine) finishSetup() (err error) {
	p, name := m.pool, m.name
	if m.meta, err = json.Marshal(client.NodeMeta{Role: client.RoleStub, HTTP: m.httpAddr, Load: p.cfg.Facts.Load}); err != nil {
		return fmt.Errorf("simulated machine %s: encode gossip metadata: %w", name, err)
	}
	var opts []client.Option
	if m.tls != nil {
		// One transport for both clients, as the stub shares its
		// connection to each server between reports and renewals.
		tr := client.NewTLSTransport(m.tls, pki.RoleServer)
		// The warming (leaseWarmEvery) keeps a lease stream open with
		// each follower, as the stub's does; the connections to the
		// servers close once idle, the renewals going on the streams.
		tr.IdleConnTimeout = leaseIdleConn
		if p.cfg.ColdServers {
			tr.IdleConnTimeout = idleConnTimeout
		}
		// One connection per server, as the stub means to hold (HTTP/2
		// carries its concurrent requests): a real stub's transport dials
		// again for each renewal while a slow server's handshake hangs,
		// and 10,000 machines doing so piled up 17 handshakes each.
		tr.MaxConnsPerHost = 1
		dial := tr.DialTLSContext
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := takeSlot(ctx, p.handshakes); err != nil {
				return nil, fmt.Errorf("simulated machine %s: wait to dial %s: %w", name, addr, err)
			}
			defer func() { <-p.handshakes }()
			return dial(ctx, network, addr)
		}
		// A lease stream's connection (client.DialUpgradeTo) is dialled
		// through DialContext and shaken hands with by the client: it
		// waits for a slot too (streamHandshakesAtOnce), held until its
		// handshake ended. Without it, 3,000 machines reopening their
		// streams after a pause of every server shook hands all at once,
		// and each server logged 22,000-35,000 handshakes that failed (10 s
		// without the client's next flight, or the client gone).
		base := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := takeSlot(ctx, p.streamHandshakes); err != nil {
				return nil, fmt.Errorf("simulated machine %s: wait to dial %s for a lease stream: %w", name, addr, err)
			}
			raw, err := base(ctx, network, addr)
			if err != nil {
				<-p.streamHandshakes
				return nil, err
			}
			return &slotConn{Conn: raw, release: sync.OnceFunc(func() { <-p.streamHandshakes })}, nil
		}
		hc := &http.Client{Timeout: 70 * time.Second, Transport: tr}
		opts = []client.Option{client.WithHTTPClient(hc), client.WithHTTPS()}
	}
	// The first join fills in the servers; until then the join
	// addresses stand in (no request goes out before it).
	if m.rc, err = client.New(p.cfg.Join, append(opts, client.WithRetryFor(reportRetryFor), client.WithTryTimeout(reportTryTimeout))...); err != nil {
		return fmt.Errorf("simulated machine %s: %w", name, err)
	}
	lease := []client.Option{client.WithRetryFor(0), client.WithHedge(leaseHedgeAfter), client.WithLeaderPatience(leaseLeaderPatience), client.WithLeaseStream()}
	if !p.cfg.ColdServers {
		lease = append(lease, client.WithWarmConnections(leaseWarmEvery))
	}
	if m.lc, err = client.New(p.cfg.Join, append(opts, lease...)...); err != nil {
		return fmt.Errorf("simulated machine %s: %w", name, err)
	}
	m.incarnation = 1
	return nil
}

// Name returns the machine's name.
func (m *Machine) Name() string { return m.name }

// HTTPAddr returns the address its API listens on.
func (m *Machine) HTTPAddr() string { return m.httpAddr }

// GossipAddr returns its gossip address.
func (m *Machine) GossipAddr() string { return m.gossipAddr }

// Dead reports whether the machine was killed.
func (m *Machine) Dead() bool { return m.dead.Load() }

// serve starts the machine's API and gossip listeners.
func (m *Machine) serve() {
	if m.pool.shared != nil {
		return // Pool.serveShared serves them all
	}
	var ln net.Listener = &machineListener{Listener: m.api, m: m}
	if m.tls != nil {
		ln = tls.NewListener(ln, m.tlsConfig)
	}
	m.pool.wg.Go(func() { _ = m.pool.srv.Serve(ln) })
	m.pool.wg.Go(m.readPackets)
	m.pool.wg.Go(m.acceptStreams)
}

// setServers gives the machine's clients the servers' addresses (when
// changed) and the leader (when known).
func (m *Machine) setServers(addrs []string, changed bool, leader string) {
	if changed && len(addrs) > 0 {
		if err := m.lc.SetAddrs(addrs); err != nil {
			m.log.Warn("server addresses", "err", err)
		}
		if err := m.rc.SetAddrs(addrs); err != nil {
			m.log.Warn("server addresses", "err", err)
		}
	}
	if leader != "" {
		m.lc.SetLeader(leader)
		m.rc.SetLeader(leader)
	}
}

// kill stops the machine at once: its listeners and connections close,
// its jobs' timers stop, and nothing more goes out.
func (m *Machine) kill() {
	if m.dead.Swap(true) {
		return
	}
	m.cancel()
	for _, c := range []interface{ Close() error }{m.api, m.tcp, m.udp} {
		if c != nil && !isNil(c) {
			_ = c.Close()
		}
	}
	m.mu.Lock()
	conns := make([]net.Conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	for _, a := range m.attempts {
		a.stopTimers()
	}
	m.outbox = nil
	m.mu.Unlock()
	for _, c := range conns { // outside m.mu: Close takes it
		_ = c.Close()
	}
}

// isNil reports whether c is a typed nil (a listener never opened).
func isNil(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case net.Listener:
		return v == nil
	case *net.UDPConn:
		return v == nil
	}
	return false
}

// machineListener notes which machine an API connection reached, and
// tracks the machine's open connections so that kill can cut them.
type machineListener struct {
	net.Listener
	m *Machine
}

func (l *machineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	mc := l.m.track(c)
	if mc == nil {
		return nil, net.ErrClosed
	}
	return mc, nil
}

// track marks c as an API connection of m, or closes it and returns nil
// when m is dead.
func (m *Machine) track(c net.Conn) *machineConn {
	mc := &machineConn{Conn: c, m: m}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead.Load() {
		_ = c.Close()
		return nil
	}
	m.conns[mc] = true
	return mc
}

type machineConn struct {
	net.Conn
	m    *Machine
	once sync.Once
}

func (c *machineConn) Close() error {
	c.once.Do(func() {
		c.m.mu.Lock()
		delete(c.m.conns, c)
		c.m.mu.Unlock()
	})
	return c.Conn.Close()
}

type machineKey struct{}

// connMachine puts the machine a connection reached in its requests'
// context (http.Server.ConnContext).
func connMachine(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if mc, ok := c.(*machineConn); ok {
		return context.WithValue(ctx, machineKey{}, mc.m)
	}
	return ctx
}

// machineOf returns the machine r reached.
func machineOf(r *http.Request) (*Machine, error) {
	m, _ := r.Context().Value(machineKey{}).(*Machine)
	if m == nil {
		return nil, errors.New("request reached no simulated machine")
	}
	return m, nil
}

// facts returns what the machine reports of itself.
func (m *Machine) facts() client.Facts {
	f := m.pool.cfg.Facts
	f.Name, f.HTTPAddr, f.GossipAddr = m.name, m.httpAddr, m.gossipAddr
	return f
}

// self returns the machine's member state, as it gossips it.
func (m *Machine) selfLocked() pushNodeState {
	return pushNodeState{Name: m.name, Addr: m.gossipIP, Port: m.gossipPort, Meta: m.meta,
		Incarnation: m.incarnation, Vsn: memberVsn}
}

// takeSlot waits for a slot of slots, or for ctx's end.
func takeSlot(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slotConn is a lease stream's connection while its handshake holds one
// of the pool's handshake slots: it gives the slot back when
// client.DialUpgradeTo says the handshake ended, or when it is closed
// first.
type slotConn struct {
	net.Conn
	release func() // once
}

// HandshakeEnded gives the slot back (client.HandshakeWatcher).
func (c *slotConn) HandshakeEnded() { c.release() }

// Close gives the slot back, if the handshake has not, and closes the
// connection.
func (c *slotConn) Close() error {
	c.release()
	return c.Conn.Close()
}
