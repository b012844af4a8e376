package stub

import (
	"slices"
	"strings"
	"sync"

	"github.com/netmgr/netmgr/client"
)

// peerList is the stubs this stub sees in the gossip pool, by machine
// name, with a client for each one's API: the stubs an outage witness
// asks (outage.go). It is safe for concurrent use.
type peerList struct {
	mu    sync.Mutex // guards peers
	peers map[string]*client.StubClient
}

func newPeerList() *peerList { return &peerList{peers: make(map[string]*client.StubClient)} }

// set records that the stub named name serves its API at addr; an empty
// addr removes it.
func (l *peerList) set(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if addr == "" {
		delete(l.peers, name)
		return
	}
	c, err := client.NewStub(addr, nil)
	if err != nil {
		delete(l.peers, name)
		return
	}
	l.peers[name] = c
}

// named is one peer and its client.
type named struct {
	name string
	c    *client.StubClient
}

// sorted returns the peers in name order.
func (l *peerList) sorted() []named { return l.withSelf("") }

// withSelf returns the peers and, when self is not empty, this stub (with
// a nil client) in name order.
func (l *peerList) withSelf(self string) []named {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]named, 0, len(l.peers)+1)
	for n, c := range l.peers {
		if n != self {
			out = append(out, named{n, c})
		}
	}
	if self != "" {
		out = append(out, named{name: self})
	}
	slices.SortFunc(out, func(a, b named) int { return strings.Compare(a.name, b.name) })
	return out
}
