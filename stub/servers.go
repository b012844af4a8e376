package stub

import (
	"slices"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
)

// reportRetryFor is how long one ReportChild retries across servers; the
// outbox sender is the real retry loop.
const reportRetryFor = 2 * time.Second

// serverList is the set of server HTTP addresses the stub reports to: the
// static ones from Config.Servers, those learned from gossip and the hint
// of the latest StartRequest. It is safe for concurrent use.
type serverList struct {
	mu     sync.Mutex // guards every field below
	static []string
	gossip map[string]string // memberlist node name -> HTTP address
	hint   []string
	c      *client.Client // nil until some address is known
	empty  bool           // no address is known now
}

func newServerList(static []string) (*serverList, error) {
	l := &serverList{static: append([]string(nil), static...), gossip: make(map[string]string)}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l, l.refreshLocked()
}

// setGossip records that node serves at addr; an empty addr removes it.
func (l *serverList) setGossip(node, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if addr == "" {
		delete(l.gossip, node)
	} else {
		l.gossip[node] = addr
	}
	_ = l.refreshLocked()
}

// setHint replaces the servers hinted by StartRequests.
func (l *serverList) setHint(addrs []string) {
	if len(addrs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Equal(l.hint, addrs) {
		return
	}
	l.hint = append([]string(nil), addrs...)
	_ = l.refreshLocked()
}

// addrs returns every known address, sorted and distinct.
func (l *serverList) addrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addrsLocked()
}

func (l *serverList) addrsLocked() []string {
	all := append(append([]string(nil), l.static...), l.hint...)
	for _, a := range l.gossip {
		all = append(all, a)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// client returns a client for the known servers, or nil when none is known.
func (l *serverList) client() *client.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.empty {
		return nil
	}
	return l.c
}

func (l *serverList) refreshLocked() error {
	addrs := l.addrsLocked()
	l.empty = len(addrs) == 0
	if l.empty {
		return nil
	}
	if l.c == nil {
		c, err := client.New(addrs, client.WithRetryFor(reportRetryFor))
		if err != nil {
			return err
		}
		l.c = c
		return nil
	}
	return l.c.SetAddrs(addrs)
}
