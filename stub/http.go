package stub

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"golang.org/x/sys/unix"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// routes returns the stub API's handler.
func (s *Stub) routes() http.Handler {
	mux := http.NewServeMux()
	// Only a server starts or signals work, or reads a job's output; stubs ask each other about
	// outages; any certificate of the cluster may read the rest.
	mux.HandleFunc("POST /v1/starts", s.only(s.handleStarts, pki.RoleServer))
	mux.HandleFunc("POST /v1/signal", s.only(s.handleSignal, pki.RoleServer))
	mux.HandleFunc("GET /v1/logs", s.only(s.handleLog, pki.RoleServer))
	mux.HandleFunc("GET /v1/session", s.only(s.handleSession, pki.RoleServer))
	mux.HandleFunc("GET /v1/shell", s.only(s.handleShell, pki.RoleServer))
	mux.HandleFunc("GET /v1/facts", s.handleFacts)
	mux.HandleFunc("GET /v1/health", s.handleHealth)
	mux.HandleFunc("GET /v1/outage", s.only(s.handleOutageStatement, pki.RoleStub, pki.RoleServer))
	mux.HandleFunc("POST /v1/outage/witness", s.only(s.handleOutageWitness, pki.RoleStub, pki.RoleServer))
	mux.HandleFunc("GET /v1/outage/tally", s.only(s.handleOutageTally, pki.RoleStub))
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no such endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// startOne runs one Start of POST /v1/starts, received at received, and
// returns its outcome (see client.StartResult), which carries the
// attempt's CHILD_REGISTER when a supervisor runs it. It blocks until the
// attempt's supervisor has it (or it failed); it is safe for concurrent
// use.
func (s *Stub) startOne(received time.Time, req client.StartRequest) client.StartResult {
	if req.Binary == "" {
		return client.StartResult{Status: http.StatusBadRequest, Error: "start: no binary"}
	}
	s.servers.setHint(req.Servers)
	if req.Restartable {
		s.lease.starting.Add(1)
		defer s.lease.starting.Add(-1)
		if !s.lease.admits(req.MachineIndex) {
			err := fmt.Errorf("start attempt %d of %d/%d: %w", req.Attempt, req.JobID, req.Instance, ErrLeaseExpired)
			return client.StartResult{Status: http.StatusConflict, Error: err.Error()}
		}
		// The lease file follows the lease only while restartable work
		// runs: bring it up to date before this attempt's supervisor
		// reads it.
		s.lease.publish()
	}
	started, reg, err := s.runner.start(req)
	s.metrics.startAnswered(received, started, err)
	switch {
	case errors.Is(err, ErrShuttingDown):
		return client.StartResult{Status: http.StatusServiceUnavailable, Error: err.Error()}
	case err != nil:
		s.log.Error("start attempt", "job", req.JobID, "instance", req.Instance, "attempt", req.Attempt, "err", err)
		return client.StartResult{Status: http.StatusInternalServerError, Error: err.Error()}
	}
	return client.StartResult{Status: http.StatusOK, Started: started, Register: reg}
}

func (s *Stub) handleSignal(w http.ResponseWriter, r *http.Request) {
	var req client.SignalRequest
	if !decode(w, r, &req, maxBody) {
		return
	}
	sig, err := parseSignal(req.Signal)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	k := client.AttemptRef{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
	err = s.runner.signal(r.Context(), k, sig, time.Duration(req.GraceMS)*time.Millisecond)
	switch {
	case errors.Is(err, ErrUnknownAttempt):
		writeError(w, http.StatusNotFound, err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

func (s *Stub) handleFacts(w http.ResponseWriter, _ *http.Request) {
	f, err := s.currentFacts()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// currentFacts is what the stub reports about its machine, as GET
// /v1/facts and the lease renewals that carry facts give it.
func (s *Stub) currentFacts() (client.Facts, error) {
	f, err := s.facts.facts(s.cfg.Name, s.httpAddr)
	if err != nil {
		return client.Facts{}, err
	}
	if s.gossip != nil {
		f.GossipAddr = s.gossip.addr
	}
	return f, nil
}

func (s *Stub) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "name": s.cfg.Name})
}

// decode reads a JSON body of at most limit bytes into v, answering 400
// when it cannot.
func decode(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("decode request: %w", err))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, client.ErrorResponse{Error: err.Error()})
}

// parseSignal turns "TERM", "SIGTERM", "term" or "15" into a signal;
// empty means SIGTERM.
func parseSignal(name string) (unix.Signal, error) {
	if name == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(name); err == nil {
		if unix.SignalName(unix.Signal(n)) == "" {
			return 0, fmt.Errorf("signal %q: %w", name, ErrUnknownSignal)
		}
		return unix.Signal(n), nil
	}
	up := strings.ToUpper(name)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	sig := unix.SignalNum(up)
	if sig == 0 {
		return 0, fmt.Errorf("signal %q: %w", name, ErrUnknownSignal)
	}
	return sig, nil
}
