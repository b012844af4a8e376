package stub

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// gossipRefusalEvery is how often a peer whose gossip this stub cannot
// read for want of the right key is logged again.
const gossipRefusalEvery = time.Minute

// keyRefusals logs gossip refused for want of the right key as a plain
// warning, once per gossipRefusalEvery per peer host, with the number of
// refusals held back since. Safe for concurrent use.
type keyRefusals struct {
	mu   sync.Mutex // guards last and held
	last map[string]time.Time
	held map[string]int
}

// maxRefusalHosts bounds the hosts keyRefusals remembers.
const maxRefusalHosts = 1024

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
	now := time.Now()
	r.mu.Lock()
	if r.last == nil || len(r.last) >= maxRefusalHosts {
		r.last, r.held = make(map[string]time.Time), make(map[string]int)
	}
	if t, seen := r.last[host]; seen && now.Sub(t) < gossipRefusalEvery {
		r.held[host]++
		r.mu.Unlock()
		return true
	}
	held := r.held[host]
	r.last[host] = now
	delete(r.held, host)
	r.mu.Unlock()
	l.Warn("gossip refused: "+means, "peer", peer, "hint", pki.GossipKeyHint,
		"memberlist", text, "refused_since_last_logged", held)
	return true
}
