package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/lease"
)

// handleLease grants a stub's lease renewal, on the leader: one renewal
// a request. Stubs renew on a lease stream (http_lease_stream.go) and
// fall back to this path while they have none.
func (s *Server) handleLease(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	var req client.LeaseRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read lease request: %w", err))
		return
	}
	if _, ok := s.requireStub(w, r, req.Machine); !ok {
		return
	}
	st := s.leader.Load()
	if st == nil {
		s.writeError(w, http.StatusServiceUnavailable, errNotLeader)
		return
	}
	resp, status, err := s.grantLease(r.Context(), st, arrival, req)
	if err != nil {
		s.writeError(w, status, err)
		return
	}
	s.metrics.leaseRenewals.WithLabelValues("request").Inc()
	s.writeJSONAt(w, http.StatusOK, resp, s.fsm.AppliedIndex())
}

// grantLease renews the lease of req.Machine, whose stub the caller has
// authenticated, as leadership st, for a renewal that arrived at arrival.
// It fails, with the HTTP status to answer, when leadership cannot be
// confirmed since arrival or a commit the renewal needs fails.
func (s *Server) grantLease(ctx context.Context, st *leaderState, arrival time.Time, req client.LeaseRequest) (client.LeaseResponse, int, error) {
	if err := st.check.since(ctx, arrival, LeaseRenewInterval*2); err != nil {
		return client.LeaseResponse{}, http.StatusServiceUnavailable, err
	}
	// What the database holds of the machine, from the lease book, which
	// the FSM keeps as it applies entries (lease.Book): no FSM lock on
	// this path, so a snapshot or a long read never holds up a renewal.
	e, known := s.book.Machine(req.Machine)
	unreachable := known && e.State == fsm.MachineUnreachable
	up := known && e.State == fsm.MachineUp // at API address e.Addr
	machineIndex := e.ModifyIndex
	var ownerSettings *client.OwnerSettings
	if known {
		ownerSettings = &client.OwnerSettings{Settings: e.Owner.Settings, Declared: e.Owner.Declared}
	}
	pool := s.book.Pool()
	wantFacts := st.facts != nil && !up
	if req.Facts != nil && st.facts != nil && (!up || req.Facts.HTTPAddr != e.Addr) {
		// The certificate check above proved the sender is the machine's
		// stub, as the fetch the join would otherwise make proves it.
		f := *req.Facts
		f.Name = req.Machine
		st.facts.put(f)
	}
	if wantFacts && st.facts.has(req.Machine) {
		wantFacts = false
	}
	if req.Load != nil {
		// A stub sends its load only when it moved (stub's loadMoved):
		// without one, the table keeps the last it was sent, and the own
		// load that came with it.
		st.leases.SetOwnLoad(req.Machine, req.OwnLoad)
	}
	var idleSince *time.Time
	if req.IdleS != nil {
		t := arrival.Add(-time.Duration(*req.IdleS) * time.Second)
		idleSince = &t
	}
	st.leases.SetIdleSince(req.Machine, idleSince)
	token := st.leases.Renew(req.Machine, arrival, req.Load, req.Token, time.Duration(req.TokenAgeMS)*time.Millisecond, pool.Size(), s.cfg.OutageGrace)
	if req.Restarting && known {
		if grace, ok := s.grantRestart(st.leases, req.Machine); ok {
			return restartLeaseResponse(grace, machineIndex), http.StatusOK, nil
		}
	}
	if unreachable {
		c := fsm.LeaseRestored{At: time.Now().UTC(), Machine: req.Machine, Running: attemptsFromWire(req.Running)}
		if _, err := s.apply(fsm.LeaseRestoredType, c); err != nil {
			return client.LeaseResponse{}, applyErrorStatus(err), err
		}
		// The machine's index as the database now has it, not the
		// entry's: a StubJoin that membership committed just before
		// brought the machine back, and this LeaseRestored then changed
		// nothing. Reporting its index would hold the stub above every
		// Start the leader builds (from the machine's ModifyIndex), so it
		// would refuse them all until the machine changed again.
		if now, ok := s.book.Machine(req.Machine); ok {
			machineIndex = max(machineIndex, now.ModifyIndex)
		}
		s.log.Info("machine reachable again", "machine", req.Machine)
	}
	if known && req.Problem != e.Unhealthy {
		s.recordHealth(req.Machine, req.Problem)
	}
	takesAsleep := s.groupApplies(fsm.MachineAsleepType)
	if known && takesAsleep && req.Asleep != nil && *req.Asleep != e.Asleep {
		s.recordAsleep(req.Machine, *req.Asleep)
	}
	timing := lease.TimingFor(pool.Size()) // what Renew recorded as granted
	return client.LeaseResponse{
		LeaseMS: timing.Duration.Milliseconds(), RenewMS: timing.Renew.Milliseconds(), TakesLoad: true, TakesAsleep: takesAsleep,
		MachineIndex: machineIndex, Token: token,
		PoolSize: pool.Size(), Position: pool.Position(req.Machine), OutageGraceMS: s.cfg.OutageGrace.Milliseconds(),
		Owner: ownerSettings, WantFacts: wantFacts, Streams: true, RenewVia: s.renewVia(req.Machine, pool.Size()),
	}, http.StatusOK, nil
}
