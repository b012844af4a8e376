package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/ui"
)

// routes builds the API. Writes are marked so that a follower forwards them
// to the leader; consistent reads are redirected to the leader unless the
// request says ?stale.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", s.forUser(s.leaderWrite(s.handleSubmit)))
	mux.HandleFunc("POST /v1/jobs/check", s.forUser(s.handleCheck))
	mux.HandleFunc("POST /v1/jobs/batch", s.forUser(s.leaderWrite(s.handleSubmitBatch)))
	mux.HandleFunc("GET /v1/jobs", s.forUser(s.leaderRead(s.handleJobs)))
	mux.HandleFunc("GET /v1/jobs/{ref}", s.forUser(s.leaderRead(s.handleJob)))
	mux.HandleFunc("POST /v1/jobs/{ref}/kill", s.forUser(s.leaderWrite(s.handleKill)))
	mux.HandleFunc("GET /v1/jobs/{ref}/session", s.forUser(s.limitStreams(alwaysStream, s.handleSession)))
	mux.HandleFunc("POST /v1/sessions/events", s.leaderWrite(s.handleSessionEvent))
	mux.HandleFunc("GET /v1/jobs/{ref}/logs", s.forUser(s.leaderRead(s.limitStreams(alwaysStream, s.handleLogs))))
	mux.HandleFunc("GET /v1/jobs/{ref}/why", s.forUser(s.leaderRead(s.handleWhy)))
	mux.HandleFunc("POST /v1/jobs/{ref}/suspend", s.forUser(s.leaderWrite(s.handleControl(fsm.SuspendType, "suspend"))))
	mux.HandleFunc("POST /v1/jobs/{ref}/resume", s.forUser(s.leaderWrite(s.handleControl(fsm.ResumeType, "resume"))))
	mux.HandleFunc("POST /v1/jobs/{ref}/restart", s.forUser(s.leaderWrite(s.handleControl(fsm.RestartJobType, "restart"))))
	mux.HandleFunc("GET /v1/queues", s.forUser(s.leaderRead(s.handleQueues)))
	mux.HandleFunc("GET /v1/share", s.forUser(s.leaderRead(s.handleShare)))
	mux.HandleFunc("GET /v1/licenses", s.forUser(s.leaderRead(s.handleLicenses)))
	mux.HandleFunc("PUT /v1/queues/{name}", s.forUser(s.leaderWrite(s.handleSetQueue)))
	mux.HandleFunc("DELETE /v1/queues/{name}", s.forUser(s.leaderWrite(s.handleRemoveQueue)))
	mux.HandleFunc("GET /v1/reservations", s.forUser(s.leaderRead(s.handleReservations)))
	mux.HandleFunc("POST /v1/reservations", s.forUser(s.leaderWrite(s.handleReserve)))
	mux.HandleFunc("POST /v1/reservations/end", s.forUser(s.leaderWrite(s.handleUnreserve)))
	mux.HandleFunc("GET /v1/machines", s.forUser(s.leaderRead(s.handleMachines)))
	mux.HandleFunc("POST /v1/admin/database", s.forUser(s.leaderWrite(s.handleLoadDatabase)))
	mux.HandleFunc("GET /v1/admin/database", s.forUser(s.leaderRead(s.handleShowDatabase)))
	mux.HandleFunc("POST /v1/admin/policy", s.forUser(s.leaderWrite(s.handleLoadPolicy)))
	mux.HandleFunc("GET /v1/admin/policy", s.forUser(s.leaderRead(s.handleShowPolicy)))
	mux.HandleFunc("POST /v1/children", s.leaderWrite(s.handleChildren))
	mux.HandleFunc("POST /v1/lease", s.leaseWrite(s.handleLease))
	mux.HandleFunc("POST "+client.LeaseStreamPath, s.handleLeaseStream)
	mux.HandleFunc("POST "+client.LeaseRelayPath, s.handleLeaseRelay)
	mux.HandleFunc("PUT /v1/blobs/{sum}", s.handlePutBlob)
	mux.HandleFunc("GET /v1/blobs/{sum}", s.handleGetBlob)
	mux.HandleFunc("PUT /v1/peer/blobs/{sum}", s.handlePeerPutBlob)
	mux.HandleFunc("GET /v1/peer/blobs/{sum}", s.handlePeerGetBlob)
	mux.HandleFunc("POST /v1/outputs", s.leaderWrite(s.handleKeepOutputs))
	mux.HandleFunc("POST /v1/checkpoints", s.leaderWrite(s.handleKeepCheckpoint))
	mux.HandleFunc("GET /v1/servers", s.handleServers)
	mux.HandleFunc("DELETE /v1/raft/servers/{name}", s.forUser(s.leaderWrite(s.handleRemoveServer)))
	mux.HandleFunc("GET /v1/agent/self", s.handleSelf)
	mux.HandleFunc("GET /v1/health", s.handleHealth)
	mux.HandleFunc("GET /v1/events", s.forUser(s.leaderRead(s.limitStreams(followStream, s.handleEvents))))
	mux.HandleFunc("GET /v1/history", s.forUser(s.leaderRead(s.handleHistory)))
	mux.HandleFunc("GET /v1/history/range", s.handleHistoryRange)
	mux.HandleFunc("POST /v1/tokens", s.forUser(s.leaderWrite(s.handleCreateToken)))
	mux.HandleFunc("GET /v1/tokens", s.forUser(s.leaderRead(s.handleTokens)))
	mux.HandleFunc("DELETE /v1/tokens/{id}", s.forUser(s.leaderWrite(s.handleRevokeToken)))
	mux.Handle("GET /metrics", s.metrics.handler())
	s.uiRoutes(mux)
	return ui.CORS(s.peerHTTP, s.authenticated(s.limitRate(s.metrics.countRequests(mux))))
}

// writeJSON answers with v as JSON and the applied index.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	idx, _ := s.fsm.Watch()
	s.writeJSONAt(w, status, v, idx)
}

// writeJSONAt is writeJSON naming index as the applied index: for
// answers that must not wait for the FSM's lock (lease renewals), with
// fsm.FSM.AppliedIndex.
func (s *Server) writeJSONAt(w http.ResponseWriter, status int, v any, idx uint64) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(client.IndexHeader, strconv.FormatUint(idx, 10))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with the error's message and a status for its kind,
// naming the applied index without the FSM's lock: a refused lease
// renewal must not wait for a snapshot any more than a granted one.
func (s *Server) writeError(w http.ResponseWriter, status int, err error) {
	s.writeJSONAt(w, status, client.ErrorResponse{Error: err.Error()}, s.fsm.AppliedIndex())
}

// writeApplyError answers for an error from apply: a lost leadership or
// absent leader is retryable (503), anything else an internal error.
func (s *Server) writeApplyError(w http.ResponseWriter, err error) {
	s.writeError(w, applyErrorStatus(err), err)
}

// applyErrorStatus is the status answering an error from apply: 503 for
// a lost leadership or absent leader, which another try may not meet,
// else 500.
func applyErrorStatus(err error) int {
	if errors.Is(err, errNotLeader) || errors.Is(err, errNoLeader) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// decodeBody reads a JSON request body into v.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// statusOf maps a rule violation from the fsm to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, fsm.ErrNoSuchJob), errors.Is(err, fsm.ErrNoSuchQueue), errors.Is(err, fsm.ErrNoSuchMachine):
		return http.StatusNotFound
	case errors.Is(err, fsm.ErrJobFinished), errors.Is(err, fsm.ErrQueueInUse), errors.Is(err, fsm.ErrReserved),
		errors.Is(err, errAmbiguousName), errors.Is(err, errUnrunnable):
		return http.StatusConflict
	}
	return http.StatusBadRequest
}
