package stub

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// gossipRefusalEvery is how often a peer whose gossip this stub cannot
// read for want of the right key is logged again.
const gossipRefusalEvery = time.Minute

// keyRefusals logs gossip refused for want of the right key as a plain
// warning, once per gossipRefusalEvery per peer host, with the number of
// refusals held back since. Safe for concurrent use; the zero value is
// ready.
type keyRefusals struct {
	once  sync.Once
	limit *warnlimit.Limiter
}

// log logs text (a memberlist line or a join error) if it tells of a key
// problem, and reports whether it did so or held it back.
func (r *keyRefusals) log(l *slog.Logger, text string) bool {
	means, ok := pki.GossipKeyProblem(text)
	if !ok {
		return false
	}
	peer := pki.GossipPeer(text)
	host, _, err := net.SplitHostPort(peer)
	if err != nil {
		host = peer
	}
	r.once.Do(func() { r.limit = warnlimit.New(gossipRefusalEvery) })
	ok, held := r.limit.Allow(host, time.Now())
	if !ok {
		return true
	}
	l.Warn("gossip refused: "+means, "peer", peer, "hint", pki.GossipKeyHint,
		"memberlist", text, "refused_since_last_logged", held)
	return true
}
