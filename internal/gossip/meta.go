package gossip

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate is the node's memberlist.Delegate: it serves the metadata and
// has nothing else to say (netmgr sends no user messages, broadcasts and
// state of its own).
type delegate struct {
	log *slog.Logger

	mu  sync.Mutex // guards raw
	raw []byte
}

var _ memberlist.Delegate = (*delegate)(nil)

// SetMeta makes raw the node's metadata, from the next time memberlist
// asks for it: at PublishMeta, and whenever it refutes a suspicion or
// answers a push/pull. The caller keeps raw unchanged from then on. raw
// must fit memberlist.MetaMaxSize (512 bytes): one that does not is
// logged and gossiped as none.
func (n *Node) SetMeta(raw []byte) {
	n.meta.mu.Lock()
	n.meta.raw = raw
	n.meta.mu.Unlock()
}

// PublishMeta gossips the metadata SetMeta last set to the pool, and
// waits up to timeout for the broadcast to go out (memberlist's
// UpdateNode).
func (n *Node) PublishMeta(timeout time.Duration) error {
	if err := n.ml.UpdateNode(timeout); err != nil {
		return fmt.Errorf("gossip metadata update: %w", err)
	}
	return nil
}

// NodeMeta returns the metadata SetMeta last set, or none when it does
// not fit in limit bytes.
func (d *delegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.raw) > limit {
		d.log.Error("gossip metadata does not fit", "len", len(d.raw), "limit", limit)
		return nil
	}
	return d.raw
}

// NotifyMsg ignores user messages; netmgr sends none.
func (*delegate) NotifyMsg([]byte) {}

// GetBroadcasts has nothing to broadcast.
func (*delegate) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState has no state to push.
func (*delegate) LocalState(bool) []byte { return nil }

// MergeRemoteState ignores pushed state.
func (*delegate) MergeRemoteState([]byte, bool) {}
