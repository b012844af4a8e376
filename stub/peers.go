package stub

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// peerList is the stubs this stub sees in the gossip pool, by machine
// name, with a client for each one's API: the stubs an outage witness
// asks (outage.go). It is safe for concurrent use.
type peerList struct {
	mu    sync.Mutex // guards peers and addrs
	peers map[string]*client.StubClient
	addrs map[string]string // the address each client of peers is for
	tls   *pki.Material     // nil in the insecure mode
}

func newPeerList(m *pki.Material) *peerList {
	return &peerList{peers: make(map[string]*client.StubClient), addrs: make(map[string]string), tls: m}
}

// set records that the stub named name serves its API at addr; an empty
// addr removes it. A peer seen again at the same address keeps its
// client, and so its open connections: gossip repeats a stub's metadata
// whenever its load changes, and a new client per update would make
// every witness round dial (and, with TLS, handshake) again.
func (l *peerList) set(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if addr == "" {
		delete(l.peers, name)
		delete(l.addrs, name)
		return
	}
	if _, ok := l.peers[name]; ok && l.addrs[name] == addr {
		return
	}
	var opts []client.Option
	if l.tls != nil {
		// Only the stub that holds name's certificate answers for name.
		opts = []client.Option{
			client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second, Transport: client.NewTLSTransport(l.tls, pki.RoleStub)}),
			client.WithHTTPS(), client.ExpectPeer(pki.Identity{Role: pki.RoleStub, Name: name}),
		}
	}
	c, err := client.NewStub(addr, opts...)
	if err != nil {
		delete(l.peers, name)
		delete(l.addrs, name)
		return
	}
	l.peers[name], l.addrs[name] = c, addr
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
