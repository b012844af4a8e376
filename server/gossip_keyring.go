package server

import (
	"log/slog"
	"net"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// gossipRefusalEvery is how often a peer whose gossip this node cannot
// read for want of the right key is logged again.
const gossipRefusalEvery = time.Minute

// memberlistLog turns memberlist's log lines into debug records, but for
// gossip refused for want of the right key: that is a warning, said
// plainly, once a minute per peer host.
type memberlistLog struct {
	log  *slog.Logger
	warn *warnLimiter
}

func newMemberlistLog(l *slog.Logger) *memberlistLog {
	return &memberlistLog{log: l, warn: newWarnLimiter(gossipRefusalEvery)}
}

func (w *memberlistLog) Write(p []byte) (int, error) {
	line := string(trimNewline(p))
	if means, ok := pki.GossipKeyProblem(line); ok {
		peer := pki.GossipPeer(line)
		host, _, err := net.SplitHostPort(peer)
		if err != nil {
			host = peer
		}
		if ok, held := w.warn.allow(host, time.Now()); ok {
			w.log.Warn("gossip refused: "+means, "peer", peer, "hint", pki.GossipKeyHint,
				"memberlist", line, "refused_since_last_logged", held)
		}
		return len(p), nil
	}
	w.log.Debug(line, "component", "memberlist")
	return len(p), nil
}
