package stub

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// reportRetryFor is how long one ReportChildren retries across servers; the
// outbox sender is the real retry loop.
const reportRetryFor = 2 * time.Second

// reportTryTimeout bounds one CHILD event delivery to one server; a commit
// takes milliseconds, so a server that takes this long is skipped.
const reportTryTimeout = time.Second

// leaseHedgeAfter is how long a renewal waits for one server before it
// asks the next one too (client.WithHedge): a server cut off by a
// partition hangs rather than refuses, and must not use up the round,
// while the leader, slow under a burst of joins (TLS handshakes, commits),
// must keep the round to answer in.
const leaseHedgeAfter = 150 * time.Millisecond

// leaseLeaderPatience is how long a renewal sent to the known leader
// waits for it before it asks the other servers too
// (client.WithLeaderPatience): while a whole pool joins, the leader is
// slow for a while, and asking the followers then costs each stub a TLS
// handshake with each of them for an answer the leader gives anyway. Half
// the round leaves the others the rest of it.
const leaseLeaderPatience = renewTimeout / 2

// leaseWarmEvery is about how often the lease client makes sure a lease
// stream waits open with each server but the leader (or, where it cannot
// open one, asks it for its health to keep a connection;
// client.WithWarmConnections): when the leader dies, the renewals then
// reach the survivors and the new leader without a TLS handshake each.
// The TLS transport closes a connection idle for leaseIdleConn, longer
// than a round, so the rounds keep the followers' open and let the
// leader's go: renewals reach the leader on the lease stream's connection
// of its own (client.LeaseUpgrade), and an idle second one from every
// stub would double the leader's open files (20,000 at 10,000 machines,
// this host's limit). Each round costs a follower a request: rounds
// every minute cost one 0.014 cores more at 1,600 machines at rest
// (0.046-0.051 against 0.032-0.036), so every 4 minutes some 0.02 at
// 10,000.
const (
	leaseWarmEvery = 4 * time.Minute
	leaseIdleConn  = 5 * time.Minute
)

// serverList is the set of server HTTP addresses the stub reports to: the
// static ones from Config.Servers, those learned from gossip and the hint
// of the latest StartRequest. It is safe for concurrent use.
type serverList struct {
	mu     sync.Mutex // guards every field below
	static []string
	gossip map[string]string // memberlist node name -> HTTP address
	// leaders are the nodes whose gossip metadata says they lead
	// (client.NodeMeta.Leader), and hinted the leader last passed to the
	// clients: a hint, which the answers' LeaderHeader corrects.
	leaders map[string]bool
	hinted  string
	hint    []string
	c       *client.Client  // nil until some address is known
	lc      *client.Client  // for lease renewals; set with c
	empty   bool            // no address is known now
	tls     []client.Option // how to reach the servers: TLS with the stub's certificate, or plain
	warm    time.Duration   // the lease client's warming period
}

// newServerList lists the servers named in static and those gossip
// adds; its clients reach them with m (plain when nil) and the lease
// client warms its connections every warm (leaseWarmEvery when zero).
func newServerList(static []string, m *pki.Material, warm time.Duration) (*serverList, error) {
	l := &serverList{static: append([]string(nil), static...), gossip: make(map[string]string), leaders: make(map[string]bool),
		tls: tlsOptions(m), warm: cmp.Or(warm, leaseWarmEvery)}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l, l.refreshLocked()
}

// setGossip records that node serves at addr, and whether its metadata
// says it leads; an empty addr removes it. A newly gossiped leader
// becomes the server the clients ask first, so that a stub that has just
// joined renews with the leader alone rather than reach it through a
// follower (and, over TLS, make a connection to each).
func (l *serverList) setGossip(node, addr string, leader bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if addr == "" {
		delete(l.gossip, node)
		delete(l.leaders, node)
	} else {
		l.gossip[node] = addr
		if leader {
			l.leaders[node] = true
		} else {
			delete(l.leaders, node)
		}
	}
	_ = l.refreshLocked()
	l.hintLeaderLocked()
}

// hintLeaderLocked passes the gossiped leader to the clients when it
// changed. While two servers claim to lead (an old leader's metadata not
// yet updated), none is hinted: the answers will tell.
func (l *serverList) hintLeaderLocked() {
	leader := ""
	if len(l.leaders) == 1 {
		for node := range l.leaders {
			leader = l.gossip[node]
		}
	}
	if leader == l.hinted || l.c == nil {
		return
	}
	l.hinted = leader
	if leader == "" {
		return
	}
	l.c.SetLeader(leader)
	l.lc.SetLeader(leader)
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

// leaseClient returns the client lease renewals use, or nil when no server
// is known: one that hedges across the servers (leaseHedgeAfter), so a
// server cut off by a partition cannot use up a renewal's whole budget.
func (l *serverList) leaseClient() *client.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.empty {
		return nil
	}
	return l.lc
}

func (l *serverList) refreshLocked() error {
	addrs := l.addrsLocked()
	l.empty = len(addrs) == 0
	if l.empty {
		return nil
	}
	if l.c == nil {
		c, err := client.New(addrs, append(l.tls, client.WithRetryFor(reportRetryFor), client.WithTryTimeout(reportTryTimeout))...)
		if err != nil {
			return err
		}
		lc, err := client.New(addrs, append(l.tls, client.WithRetryFor(0), client.WithHedge(leaseHedgeAfter), client.WithLeaderPatience(leaseLeaderPatience),
			client.WithLeaseStream(), client.WithWarmConnections(l.warm))...)
		if err != nil {
			return err
		}
		l.c, l.lc = c, lc
		return nil
	}
	if slices.Equal(l.c.Addrs(), normalized(addrs, l.scheme())) {
		return nil // keep each client's memory of which server answered
	}
	if err := l.lc.SetAddrs(addrs); err != nil {
		return err
	}
	return l.c.SetAddrs(addrs)
}

// scheme is the scheme of the servers' API URLs.
func (l *serverList) scheme() string {
	if len(l.tls) > 0 {
		return "https://"
	}
	return "http://"
}

// tlsOptions are the client options for reaching servers with m: TLS with
// the stub's certificate, or nothing for the insecure mode. The report and
// lease clients share one transport, so they share each server's
// connection: a stub pays for one TLS handshake per server, not two, which
// counts when a whole pool joins at once.
func tlsOptions(m *pki.Material) []client.Option {
	if m == nil {
		return nil
	}
	tr := client.NewTLSTransport(m, pki.RoleServer)
	tr.IdleConnTimeout = leaseIdleConn // the followers' kept warm (leaseWarmEvery)
	hc := &http.Client{Timeout: 70 * time.Second, Transport: tr}
	return []client.Option{client.WithHTTPClient(hc), client.WithHTTPS()}
}

// normalized writes addresses as the client keeps them.
func normalized(addrs []string, scheme string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		if !strings.Contains(a, "://") {
			a = scheme + a
		}
		out[i] = strings.TrimRight(a, "/")
	}
	return out
}
