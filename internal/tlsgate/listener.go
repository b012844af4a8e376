package tlsgate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
)

// PerCPU is how many handshakes a Listener made by New lets run at once
// for each CPU Go may use. A slot is held across the client's round trip
// as well as the server's CPU (a few hundred microseconds in a few
// slices), so the bound must cover slow clients: 32 a CPU keep 64
// handshakes at once on two cores (over 300 a second with clients a
// 200 ms round trip away) while a newly woken goroutine waits behind at
// most 64 slices of handshake, some 20 ms, not seconds. (A 10,000-machine
// join stalled on a 2-core box with 8 a CPU, slots a slowly answering
// simulator can hold.)
const PerCPU = 32

// Timeout bounds one handshake, waiting for its turn excluded: as long as
// http.Server's ReadHeaderTimeout in the servers and a stub's patience
// for a lease stream's opening.
const Timeout = 10 * time.Second

// ErrClientGone is the handshake error of a connection whose client had
// closed it before its turn came.
var ErrClientGone = errors.New("client closed the connection before its handshake")

// Listener is a net.Listener whose Accept returns *tls.Conn whose
// handshake succeeded. Safe for concurrent use.
type Listener struct {
	inner   net.Listener
	config  *tls.Config
	slots   chan struct{}  // one token a handshake under way
	ready   chan *tls.Conn // handshaken, for Accept
	onError func(net.Addr, error)

	done      chan struct{} // closed by Close or the inner listener's end
	ctx       context.Context
	cancel    context.CancelFunc // ends handshakes under way, with done
	closeOnce sync.Once
	errMu     sync.Mutex // guards err
	err       error      // why Accept returns nothing more
}

// New wraps inner, handshaking each connection with config, at most
// PerCPU times GOMAXPROCS at once. onError, if not nil, is told of each
// handshake that failed (ErrClientGone among them); it must not block.
func New(inner net.Listener, config *tls.Config, onError func(net.Addr, error)) *Listener {
	return NewAtOnce(inner, config, PerCPU*runtime.GOMAXPROCS(0), onError)
}

// NewAtOnce is New with atOnce handshakes at a time (at least 1).
func NewAtOnce(inner net.Listener, config *tls.Config, atOnce int, onError func(net.Addr, error)) *Listener {
	l := &Listener{
		inner:   inner,
		config:  gated(config),
		slots:   make(chan struct{}, max(atOnce, 1)),
		ready:   make(chan *tls.Conn),
		onError: onError,
		done:    make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.acceptLoop()
	return l
}

// Accept returns the next connection whose handshake is done.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		l.errMu.Lock()
		defer l.errMu.Unlock()
		return nil, l.err
	}
}

// Close stops accepting; connections waiting for their handshake or in
// it are closed.
func (l *Listener) Close() error {
	err := l.inner.Close()
	l.stop(net.ErrClosed)
	return err
}

// Addr is the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// stop ends Accept with err, the first time.
func (l *Listener) stop(err error) {
	l.closeOnce.Do(func() {
		l.errMu.Lock()
		l.err = err
		l.errMu.Unlock()
		close(l.done)
		l.cancel()
	})
}

// acceptLoop takes connections from the inner listener and starts each
// one's handshake, until the inner listener is closed; on any other error
// (out of descriptors) it waits as http.Server does, from 5 ms doubling
// to 1 s, and tries again.
func (l *Listener) acceptLoop() {
	var wait time.Duration
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.stop(fmt.Errorf("tls gate: accept: %w", err))
				return
			}
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			select {
			case <-l.done:
				return
			case <-time.After(wait):
			}
			continue
		}
		wait = 0
		go l.handshake(raw)
	}
}

// handshake waits for a slot, handshakes raw and hands the connection to
// Accept.
func (l *Listener) handshake(raw net.Conn) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		raw.Close()
		return
	}
	conn := tls.Server(raw, l.config)
	ctx, cancel := context.WithTimeout(l.ctx, Timeout)
	err := conn.HandshakeContext(ctx)
	cancel()
	<-l.slots
	if err != nil {
		raw.Close()
		if l.onError != nil {
			l.onError(raw.RemoteAddr(), err)
		}
		return
	}
	select {
	case l.ready <- conn:
	case <-l.done:
		conn.Close()
	}
}
