package gossip

import (
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/slogadapt"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// RefusalEvery is how often gossip refused for want of the right key is
// logged again for one peer host.
const RefusalEvery = time.Minute

// refusals logs gossip refused for want of the right key as one plain
// warning per RefusalEvery per peer host, with the count held back
// since. Safe for concurrent use.
type refusals struct {
	log   *slog.Logger
	now   func() time.Time
	limit *warnlimit.Limiter
}

func newRefusals(l *slog.Logger, now func() time.Time) *refusals {
	return &refusals{log: l, now: now, limit: warnlimit.New(RefusalEvery)}
}

// writer is memberlist's log output: its lines go to the log at their
// own level (slogadapt.Memberlist), but for refusals, which log logs.
func (r *refusals) writer() io.Writer { return slogadapt.Memberlist(r.log, r.logged) }

// Refused logs text (a memberlist log line or a Join error) as a
// warning if it tells of gossip refused for want of the right key, at
// most once per RefusalEvery per peer host, and reports whether it told
// of one (logged or held back).
func (n *Node) Refused(text string) bool { return n.refusals.logged(text) }

// logged is Refused.
func (r *refusals) logged(text string) bool {
	means, ok := pki.GossipKeyProblem(text)
	if !ok {
		return false
	}
	peer := pki.GossipPeer(text)
	host, _, err := net.SplitHostPort(peer)
	if err != nil {
		host = peer
	}
	if ok, held := r.limit.Allow(host, r.now()); ok {
		r.log.Warn("gossip refused: "+means, "peer", peer, "hint", pki.GossipKeyHint,
			"memberlist", text, "refused_since_last_logged", held)
	}
	return true
}
