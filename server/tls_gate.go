package server

import (
	"errors"
	"net"
	"time"

	"github.com/netmgr/netmgr/internal/tlsgate"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// handshakeWarnEvery is how often a failed API handshake is logged again
// for one client host; the failures in between are counted in the next
// line.
const handshakeWarnEvery = time.Minute

// gateTLS puts the API listener's handshakes through a tlsgate.Listener,
// tlsgate.PerCPU at a time for each CPU, so that a pool dialling at once
// (after a leader's death or the whole group's pause) leaves the CPU to
// Raft's heartbeats between them (internal/tlsgate).
func (s *Server) gateTLS(ln net.Listener) net.Listener {
	warn := warnlimit.New(handshakeWarnEvery)
	return tlsgate.New(ln, s.cfg.TLS.ServerConfig(false), func(from net.Addr, err error) {
		gone := errors.Is(err, tlsgate.ErrClientGone)
		s.metrics.handshakeFailed(gone)
		if gone {
			return // a client's patience, not a fault: counted only
		}
		host := from.String()
		if h, _, splitErr := net.SplitHostPort(host); splitErr == nil {
			host = h
		}
		if ok, held := warn.Allow(host, time.Now()); ok {
			s.log.Warn("API TLS handshake failed", "from", from, "err", err, "since_last", held)
		}
	})
}
