package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// Admission of servers to the Raft group, when the group runs TLS.
const (
	// admitTimeout bounds the TLS dial that checks a would-be server.
	admitTimeout = 3 * time.Second
	// admitRetry is how long a refused server waits before it is checked
	// again: it may have been given the right certificate meanwhile.
	admitRetry = 2 * time.Second
	// admitLogEvery is how often a refused server is logged again.
	admitLogEvery = time.Minute
)

// admission checks gossip members with the server role before they join
// the Raft configuration, when Raft runs over TLS (raftNode.overTLS): the Raft
// address a member gossips must answer over TLS with a server
// certificate of the cluster CA whose name is the member's name. Anyone
// who holds the gossip key can gossip that it is a server; only the CA
// makes a server certificate. It lives as long as the server, so that a
// refused member is logged once a minute however often leadership moves.
// Safe for concurrent use.
type admission struct {
	warn *warnlimit.Limiter
	// refused counts the refusals, for tests; they are counted in
	// netmgr_requests_denied_total{reason="rogue_server"} too.
	refused atomic.Int64

	mu        sync.Mutex // guards pending and refusedAt
	pending   map[string]bool
	refusedAt map[string]time.Time
}

func newAdmission() *admission {
	return &admission{
		warn:      warnlimit.New(admitLogEvery),
		pending:   make(map[string]bool),
		refusedAt: make(map[string]time.Time),
	}
}

// verifyServer dials the Raft address addr over TLS and returns an error
// unless the certificate there is a server's of the cluster CA named
// name.
func verifyServer(ctx context.Context, m *pki.Material, name, addr string) error {
	c, id, err := dialServerTLS(ctx, m, addr, admitTimeout)
	if err != nil {
		return fmt.Errorf("no server certificate of the cluster CA at its raft address: %w", err)
	}
	_ = c.Close()
	if id.Name != name {
		return fmt.Errorf("its raft address %s answers as %s, not as server %s", addr, id, name)
	}
	return nil
}

// begin reports whether name may be checked now: no check of it is under
// way and it was not refused within admitRetry. It marks name pending;
// the caller calls end.
func (a *admission) begin(name string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending[name] || now.Sub(a.refusedAt[name]) < admitRetry {
		return false
	}
	a.pending[name] = true
	return true
}

// end records the outcome of a check begun with begin.
func (a *admission) end(name string, refused bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, name)
	if refused {
		a.refusedAt[name] = now
	} else {
		delete(a.refusedAt, name)
	}
}

// refuseServer logs (once per admitLogEvery per member) and counts a
// refusal to let name into the Raft group.
func (s *Server) refuseServer(name, addr string, why error) {
	s.admission.refused.Add(1)
	s.metrics.denied(denyRogueServer)
	if ok, held := s.admission.warn.Allow(name, time.Now()); ok {
		s.log.Warn(fmt.Sprintf("refused to add server %s: %v", name, why),
			"raft", addr, "refused_since_last_logged", held,
			"hint", "only a member with a server certificate of the cluster CA naming it joins the raft group")
	}
}

// admitServer adds the gossip member name to the Raft configuration as
// a voter at addr, once it proved itself a server (when Raft runs over
// TLS), in a goroutine that wg tracks. It returns at once. Over another
// transport (plain TCP under --insecure, or a test's in-memory one) it
// adds the voter at once: addresses there prove nothing.
func (m *membership) admitServer(ctx context.Context, name, addr string) {
	s := m.s
	if !s.node.overTLS {
		s.addVoter(name, addr)
		return
	}
	if !s.admission.begin(name, time.Now()) {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := verifyServer(ctx, s.cfg.TLS, name, addr)
		s.admission.end(name, err != nil, time.Now())
		switch {
		case ctx.Err() != nil:
		case err != nil:
			s.refuseServer(name, addr, err)
		default:
			s.addVoter(name, addr)
		}
	}()
}

// verifiedPeers returns the peers of a bootstrap configuration that
// proved themselves servers (admitServer's check), this server among
// them; the others are refused. It dials each peer, so it is for the
// moment a server is about to bootstrap.
func (s *Server) verifiedPeers(peers []raft.Server) []raft.Server {
	var out []raft.Server
	for _, p := range peers {
		name, addr := string(p.ID), string(p.Address)
		if name == s.cfg.Name {
			out = append(out, p)
			continue
		}
		if !s.admission.begin(name, time.Now()) {
			continue // refused a moment ago, or being checked
		}
		err := verifyServer(s.ctx, s.cfg.TLS, name, addr)
		s.admission.end(name, err != nil, time.Now())
		if err != nil {
			if s.ctx.Err() == nil {
				s.refuseServer(name, addr, err)
			}
			continue
		}
		out = append(out, p)
	}
	return out
}
