package raftnode

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/warnlimit"
)

// Admission of servers to the Raft group, when the group runs TLS.
const (
	// admitTimeout bounds the TLS dial that checks a would-be server.
	admitTimeout = 3 * time.Second
	// AdmitRetry is how long a refused server waits before it is checked
	// again: it may have been given the right certificate meanwhile.
	AdmitRetry = 2 * time.Second
	// admitLogEvery is how often a refused server is logged again.
	admitLogEvery = time.Minute
)

// Admission is the record of the checks of would-be servers before they
// join the Raft configuration, when Raft runs over TLS (Node.OverTLS):
// the Raft address a gossip member gives must answer over TLS with a
// server certificate of the cluster CA whose name is the member's name
// (VerifyServer). Anyone who holds the gossip key can gossip that it is a
// server; only the CA makes a server certificate. It lives as long as the
// server, so that a refused member is logged once a minute however often
// leadership moves. Safe for concurrent use.
type Admission struct {
	warn *warnlimit.Limiter
	// refused counts the refusals, for tests; the server counts them in
	// netmgr_requests_denied_total{reason="rogue_server"} too.
	refused atomic.Int64

	mu        sync.Mutex // guards pending and refusedAt
	pending   map[string]bool
	refusedAt map[string]time.Time
}

// NewAdmission returns an Admission that has checked no one.
func NewAdmission() *Admission {
	return &Admission{
		warn:      warnlimit.New(admitLogEvery),
		pending:   make(map[string]bool),
		refusedAt: make(map[string]time.Time),
	}
}

// VerifyServer dials the Raft address addr over TLS and returns an error
// unless the certificate there is a server's of the cluster CA named
// name. It blocks for at most admitTimeout.
func VerifyServer(ctx context.Context, m *pki.Material, name, addr string) error {
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

// Begin reports whether name may be checked now: no check of it is under
// way and it was not refused within AdmitRetry. It marks name pending;
// the caller calls End.
func (a *Admission) Begin(name string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending[name] || now.Sub(a.refusedAt[name]) < AdmitRetry {
		return false
	}
	a.pending[name] = true
	return true
}

// End records the outcome of a check begun with Begin.
func (a *Admission) End(name string, refused bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, name)
	if refused {
		a.refusedAt[name] = now
	} else {
		delete(a.refusedAt, name)
	}
}

// Refuse counts a refusal to let name into the Raft group at now, and
// reports whether to log it (once per admitLogEvery per member) and how
// many refusals of name went unlogged since the last one logged.
func (a *Admission) Refuse(name string, now time.Time) (log bool, held int) {
	a.refused.Add(1)
	return a.warn.Allow(name, now)
}

// Refused is the number of refusals counted so far.
func (a *Admission) Refused() int64 { return a.refused.Load() }
