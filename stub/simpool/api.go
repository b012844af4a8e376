package simpool

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// API limits, as the stub's (stub/http_starts.go).
const (
	maxBody        = 1 << 20
	maxBatchBody   = 8 << 20
	maxBatchStarts = 1024
)

// routes is the machines' API, the part of the stub's that servers and
// stubs use: Starts and Signal (server certificates only), facts, health
// and the outage questions (outage.go). The rest (job output, metrics)
// is not simulated and answers 404.
func (p *Pool) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/starts", only(handleStarts))
	mux.HandleFunc("POST /v1/signal", only(handleSignal))
	mux.HandleFunc("GET /v1/facts", func(w http.ResponseWriter, r *http.Request) {
		if m := mustMachine(w, r); m != nil {
			writeJSON(w, http.StatusOK, m.facts())
		}
	})
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		if m := mustMachine(w, r); m != nil {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "name": m.name})
		}
	})
	mux.HandleFunc("GET /v1/outage", onlyRoles(handleOutageStatement, pki.RoleStub, pki.RoleServer))
	mux.HandleFunc("POST /v1/outage/witness", onlyRoles(handleOutageWitness, pki.RoleStub, pki.RoleServer))
	mux.HandleFunc("GET /v1/outage/tally", onlyRoles(handleOutageTally, pki.RoleStub))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no such endpoint %s %s on a simulated machine", r.Method, r.URL.Path))
	})
	return mux
}

// only runs h for callers with a server certificate (every caller
// without TLS), as the stub's API does for Starts and Signal.
func only(h func(*Machine, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return onlyRoles(h, pki.RoleServer)
}

func mustMachine(w http.ResponseWriter, r *http.Request) *Machine {
	m, err := machineOf(r)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return nil
	}
	return m
}

// handleStarts answers POST /v1/starts: one result per Start, in order,
// each carrying its attempt's REGISTER.
func handleStarts(m *Machine, w http.ResponseWriter, r *http.Request) {
	var batch client.StartBatchRequest
	if !decodeBody(w, r, &batch, maxBatchBody) {
		return
	}
	if len(batch.Starts) > maxBatchStarts {
		writeError(w, http.StatusBadRequest, fmt.Errorf("start batch: %d starts, at most %d", len(batch.Starts), maxBatchStarts))
		return
	}
	resp := client.StartBatchResponse{Results: make([]client.StartResult, len(batch.Starts))}
	for i, req := range batch.Starts {
		resp.Results[i] = m.start(req)
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleSignal answers POST /v1/signal.
func handleSignal(m *Machine, w http.ResponseWriter, r *http.Request) {
	var req client.SignalRequest
	if !decodeBody(w, r, &req, maxBody) {
		return
	}
	k := client.AttemptRef{JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt}
	status, err := m.signal(k, req.Signal, time.Duration(req.GraceMS)*time.Millisecond)
	if err != nil {
		writeError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v); err != nil {
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
