package raftnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// raftHandshakeTimeout bounds the TLS handshake of a Raft connection,
// accepted or dialled.
const raftHandshakeTimeout = 10 * time.Second

// raftRefusalEvery is how often a refused Raft peer is logged again; the
// refusals in between are counted in the next line.
const raftRefusalEvery = time.Minute

// tlsStreamLayer is Raft's connection layer over TLS 1.3 with mutual
// authentication: it accepts only peers whose certificate, signed by the
// cluster CA, has the server role, and dials peers expecting the same.
// hashicorp/raft's NetworkTransport runs on it as on its own TCP layer.
//
// Handshakes of accepted connections run in goroutines of their own, so
// a peer that stalls its handshake holds up no other; Accept hands Raft
// only connections whose handshake and role check passed. Close stops
// the listener, interrupts handshakes in progress and waits for them.
type tlsStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	tls       *pki.Material
	log       *slog.Logger
	warn      *warnlimit.Limiter

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	conns  chan net.Conn  // accepted and checked, for Accept
	wg     sync.WaitGroup // the accept loop and every handshake
	once   sync.Once

	// refused counts the connections refused, for tests; onRefuse, when
	// not nil, is called for each too (the server's denied-requests
	// metric).
	refused  atomic.Int64
	onRefuse func()
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

// newTLSStreamLayer listens on bind. advertise is the address peers
// reach; nil means the address bound, which must then be a specific one.
// onRefuse, when not nil, is called for every connection refused.
func newTLSStreamLayer(bind string, advertise net.Addr, m *pki.Material, log *slog.Logger, onRefuse func()) (*tlsStreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("listen raft: %w", err)
	}
	l := &tlsStreamLayer{
		ln:        ln,
		advertise: advertise,
		tls:       m,
		log:       log,
		warn:      warnlimit.New(raftRefusalEvery),
		conns:     make(chan net.Conn),
		onRefuse:  onRefuse,
	}
	if a, ok := l.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("listen raft on %s: %w", bind, errNotAdvertisable)
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// newTLSTransport is Raft's NetworkTransport on a tlsStreamLayer.
func newTLSTransport(bind string, advertise net.Addr, m *pki.Material, log *slog.Logger, hlog hclog.Logger, onRefuse func()) (*raft.NetworkTransport, *tlsStreamLayer, error) {
	stream, err := newTLSStreamLayer(bind, advertise, m, log, onRefuse)
	if err != nil {
		return nil, nil, err
	}
	t := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          stream,
		MaxPool:         3,
		Timeout:         10 * time.Second,
		Logger:          hlog,
		MaxRPCsInFlight: maxRPCsInFlight,
	})
	return t, stream, nil
}

// acceptLoop accepts TCP connections and starts a handshake for each,
// until the listener is closed.
func (l *tlsStreamLayer) acceptLoop() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			// A passing failure (out of file descriptors): back off as
			// net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.log.Warn("accept raft connection failed; retrying", "err", err, "in", delay)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		l.wg.Add(1)
		go l.handshake(c)
	}
}

// handshake completes the TLS handshake of an accepted connection and
// checks that the peer is a server; it queues the connection for Accept
// or refuses it.
func (l *tlsStreamLayer) handshake(c net.Conn) {
	defer l.wg.Done()
	tc := tls.Server(c, l.tls.ServerConfig(true))
	ctx, cancel := context.WithTimeout(l.ctx, raftHandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		l.refuse(tc, fmt.Errorf("TLS handshake: %w", err))
		return
	}
	cs := tc.ConnectionState()
	if _, err := pki.CheckPeer(&cs, pki.RoleServer); err != nil {
		l.refuse(tc, err)
		return
	}
	select {
	case l.conns <- tc:
	case <-l.ctx.Done():
		_ = tc.Close()
	}
}

// refuse closes a connection Raft never sees and logs why.
func (l *tlsStreamLayer) refuse(c net.Conn, why error) {
	_ = c.Close()
	if l.ctx.Err() != nil {
		return // closing: handshakes in progress were cut short
	}
	l.refused.Add(1)
	if l.onRefuse != nil {
		l.onRefuse()
	}
	peer := c.RemoteAddr().String()
	host, _, err := net.SplitHostPort(peer)
	if err != nil {
		host = peer
	}
	if ok, held := l.warn.Allow(host, time.Now()); ok {
		l.log.Warn("refused raft connection: only a server certificate of the cluster CA may speak Raft",
			"peer", peer, "why", why, "refused_since_last_logged", held)
	}
}

// Accept returns the next connection from a peer proven to be a server.
// It blocks until there is one or the layer is closed.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		return nil, fmt.Errorf("accept raft connection: %w", net.ErrClosed)
	}
}

// Close stops accepting, interrupts the handshakes in progress and waits
// for them. Connections already handed to Raft are Raft's to close.
func (l *tlsStreamLayer) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		err = l.ln.Close()
		l.wg.Wait()
	})
	return err
}

// Addr is the address peers reach this server's Raft at.
func (l *tlsStreamLayer) Addr() net.Addr {
	if l.advertise != nil {
		return l.advertise
	}
	return l.ln.Addr()
}

// Dial connects to a peer's Raft over TLS and returns once the handshake
// is done and the peer's certificate proved it a server; the whole takes
// at most timeout.
func (l *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, _, err := dialServerTLS(l.ctx, l.tls, string(address), timeout)
	return c, err
}

// dialServerTLS dials addr over TLS and checks that the peer is a server
// of the cluster CA; it returns the connection and the peer's identity.
func dialServerTLS(ctx context.Context, m *pki.Material, addr string, timeout time.Duration) (net.Conn, pki.Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: m.ClientConfig(pki.RoleServer)}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, pki.Identity{}, fmt.Errorf("dial raft at %s over TLS: %w", addr, err)
	}
	cs := c.(*tls.Conn).ConnectionState()
	id, err := m.Verify(cs.PeerCertificates)
	if err != nil {
		_ = c.Close()
		return nil, pki.Identity{}, fmt.Errorf("dial raft at %s: %w", addr, err)
	}
	return c, id, nil
}
