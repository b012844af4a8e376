package tlsgate

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// gated returns a copy of config whose GetConfigForClient first refuses a
// client that has gone (ErrClientGone), then answers as config does.
func gated(config *tls.Config) *tls.Config {
	c := config.Clone()
	next := config.GetConfigForClient
	c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if clientGone(hello.Conn) {
			return nil, ErrClientGone
		}
		if next == nil {
			return nil, nil
		}
		return next(hello)
	}
	return c
}

// clientGone reports whether conn's peer has closed its side with nothing
// unread before the close: after the ClientHello, a client still waiting
// sends nothing until the server answers, so a FIN there is one that gave
// up. It peeks without blocking and without taking any byte.
func clientGone(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	var buf [1]byte
	_ = rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		gone = n == 0 && err == nil || errors.Is(err, unix.ECONNRESET)
		return true // never wait: one look
	})
	return gone
}
