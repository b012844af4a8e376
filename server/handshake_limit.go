package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"
)

// handshakeTimeout bounds a connection's wait for a handshake slot and
// its handshake together, as ReadHeaderTimeout bounds a request's header.
const handshakeTimeout = 10 * time.Second

// slotHold is the longest a handshake keeps its slot: one whose client
// stalls mid-handshake frees the slot for the next after this, and goes
// on without one.
const slotHold = 50 * time.Millisecond

// handshakeListener is a TLS listener that completes each connection's
// handshake before Accept returns it, a few at a time (slots: four per
// CPU the runtime uses). A handshake is about a millisecond of CPU that
// never yields; a pool of thousands of stubs connecting at once (a pool
// starting, a new leader every stub moves to) made thousands of them
// runnable at once, and the Raft heartbeats queued behind them arrived
// late enough for the leader to lose its quorum lease and step down,
// which sent every stub to the next leader to handshake again. With the
// slots, the connections wait, not the heartbeats.
//
// A connection takes a slot only once its first bytes (the ClientHello)
// have come, and keeps it at most slotHold: a client that connects and
// sends nothing, or stalls mid-handshake, delays nobody else by more than
// that. The http.Server's own handshake call then finds the handshake
// done.
type handshakeListener struct {
	raw   net.Listener
	cfg   *tls.Config
	log   *slog.Logger
	slots chan struct{}
	hold  time.Duration // slotHold, but in tests
	ready chan net.Conn // handshaken connections, for Accept
	done  chan struct{} // closed once the raw listener is closed
	once  sync.Once
	err   error // why the raw listener stopped; set before done closes
}

// newHandshakeListener starts accepting on raw with TLS configuration
// cfg.
func newHandshakeListener(raw net.Listener, cfg *tls.Config, log *slog.Logger) *handshakeListener {
	l := &handshakeListener{raw: raw, cfg: cfg, log: log, hold: slotHold,
		slots: make(chan struct{}, 4*runtime.GOMAXPROCS(0)), ready: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

// acceptLoop accepts raw connections and starts each one's handshake,
// until the raw listener is closed.
func (l *handshakeListener) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.raw.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.err = err
				close(l.done)
				return
			}
			// Out of file descriptors and the like: wait, as http.Server
			// does, rather than spin.
			l.log.Warn("accept API connection failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		go l.handshake(c)
	}
}

// handshake waits for c's first bytes and a slot, completes c's
// handshake and hands the connection to Accept; a connection that fails
// or takes longer than handshakeTimeout is closed.
func (l *handshakeListener) handshake(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	first := make([]byte, 1)
	if _, err := io.ReadFull(c, first); err != nil {
		_ = c.Close()
		return
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		_ = c.Close()
		return
	case <-l.done:
		_ = c.Close()
		return
	}
	release := sync.OnceFunc(func() { <-l.slots })
	hold := time.AfterFunc(l.hold, release)
	tc := tls.Server(&readAgainConn{Conn: c, first: first}, l.cfg)
	err := tc.HandshakeContext(ctx)
	hold.Stop()
	release()
	if err != nil {
		l.log.Debug("TLS handshake failed", "remote", c.RemoteAddr(), "err", err)
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case l.ready <- tc:
	case <-l.done:
		_ = tc.Close()
	}
}

// readAgainConn is a connection whose first bytes were read already:
// its reads return them before reading on.
type readAgainConn struct {
	net.Conn
	first []byte
}

func (c *readAgainConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// Accept returns the next connection whose handshake is done.
func (l *handshakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close stops accepting; handshakes under way are abandoned.
func (l *handshakeListener) Close() error {
	var err error
	l.once.Do(func() { err = l.raw.Close() })
	return err
}

// Addr is the raw listener's address.
func (l *handshakeListener) Addr() net.Addr { return l.raw.Addr() }
