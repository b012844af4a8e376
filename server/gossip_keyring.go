package server

import (
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/slogadapt"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// gossipRefusalEvery is how often a peer whose gossip this node cannot
// read for want of the right key is logged again.
const gossipRefusalEvery = time.Minute

// memberlistLog is memberlist's log output: its lines go to the server's
// log at their own level (slogadapt.Memberlist), but for gossip refused
// for want of the right key: that is a warning, said plainly, once a
// minute per peer host.
type memberlistLog struct {
	log  *slog.Logger
	warn *warnlimit.Limiter
}

func newMemberlistLog(l *slog.Logger) io.Writer {
	w := &memberlistLog{log: l, warn: warnlimit.New(gossipRefusalEvery)}
	return slogadapt.Memberlist(l, w.keyProblem)
}

// keyProblem logs line and returns true when it reports gossip refused
// for want of the right key.
func (w *memberlistLog) keyProblem(line string) bool {
	means, ok := pki.GossipKeyProblem(line)
	if !ok {
		return false
	}
	peer := pki.GossipPeer(line)
	host, _, err := net.SplitHostPort(peer)
	if err != nil {
		host = peer
	}
	if ok, held := w.warn.Allow(host, time.Now()); ok {
		w.log.Warn("gossip refused: "+means, "peer", peer, "hint", pki.GossipKeyHint,
			"memberlist", line, "refused_since_last_logged", held)
	}
	return true
}
